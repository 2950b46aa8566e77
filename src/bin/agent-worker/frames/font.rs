//! A tiny bitmap font for the recording's captions: printable ASCII in 5×7 cells, drawn by
//! the worker's own hand (no font file, no font crate), scaled by whole pixels.
//!
//! Guarantees: every character has a glyph; one outside printable ASCII is drawn as `?`, so a
//! caption never fails to render.

/// One glyph per character from ' ' to '~': row `r` of the cell is bits `5r..5r+5`, the
/// leftmost pixel the highest of the five.
const GLYPHS: [u64; 95] = [
    0x000000000,
    0x100421084,
    0x00000014a,
    0x2bea52bea,
    0x13c5751e4,
    0x4e6821359,
    0x36554524c,
    0x000000084,
    0x088842082,
    0x208210888,
    0x009575480,
    0x0084f9080,
    0x208400000,
    0x0000f8000,
    0x318000000,
    0x410820841,
    0x3a39ace2e,
    0x388421184,
    0x7d041062e,
    0x78217043e,
    0x085f928c2,
    0x3a210fa1f,
    0x3a31f4106,
    0x21082083f,
    0x3a317462e,
    0x30417c62e,
    0x018c03180,
    0x208c03180,
    0x088882082,
    0x001f07c00,
    0x208208888,
    0x10041062e,
    0x3e17ade2e,
    0x4631fc62e,
    0x7a31f463e,
    0x3a308422e,
    0x72518c65c,
    0x7e10f421f,
    0x4210f421f,
    0x3e31bc22e,
    0x4631fc631,
    0x38842108e,
    0x324210847,
    0x4654c5251,
    0x7e1084210,
    0x4631ad771,
    0x4633ae631,
    0x3a318c62e,
    0x4210f463e,
    0x36558c62e,
    0x4654f463e,
    0x78217420f,
    0x10842109f,
    0x3a318c631,
    0x11518c631,
    0x2ab5ac631,
    0x462a22a31,
    0x108422a31,
    0x7e082083f,
    0x39084210e,
    0x044222110,
    0x38421084e,
    0x000004544,
    0x7c0000000,
    0x000000088,
    0x3e2f0b800,
    0x7a318fa10,
    0x3e1083c00,
    0x3e318bc21,
    0x3a1f8b800,
    0x210847906,
    0x382f8c5e0,
    0x46318fa10,
    0x388423004,
    0x324211802,
    0x4a98a4a10,
    0x38842108c,
    0x56b5ae800,
    0x46318f800,
    0x3a318b800,
    0x421e8c7c0,
    0x042f8c5e0,
    0x4210cd800,
    0x782e83c00,
    0x192847908,
    0x36718c400,
    0x11518c400,
    0x2ab58c400,
    0x454454400,
    0x382f8c620,
    0x7d0417c00,
    0x088441082,
    0x108421084,
    0x208411088,
    0x0002aa000,
];

pub const CELL_W: usize = 5;
pub const CELL_H: usize = 7;

/// Whether the pixel at (`col`, `row`) of `c`'s cell is ink.
pub fn ink(c: char, col: usize, row: usize) -> bool {
    let code = c as u32;
    let index = if (32..127).contains(&code) { code - 32 } else { '?' as u32 - 32 };
    let glyph = GLYPHS[index as usize];
    col < CELL_W && row < CELL_H && (glyph >> (5 * row + (CELL_W - 1 - col))) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glyphs_have_their_shapes() {
        assert!((0..CELL_W).all(|c| (0..CELL_H).all(|r| !ink(' ', c, r))), "a space is blank");
        // `|` is the middle column, top to bottom.
        assert!((0..CELL_H).all(|r| ink('|', 2, r) && !ink('|', 0, r) && !ink('|', 4, r)));
        // `_` is the bottom row only.
        assert!((0..CELL_W).all(|c| ink('_', c, 6) && !ink('_', c, 0)));
        // Outside ASCII: the question mark.
        let same = |a: char, b: char| (0..CELL_W).all(|c| (0..CELL_H).all(|r| ink(a, c, r) == ink(b, c, r)));
        assert!(same('é', '?') && !same('A', '?'));
        // Every printable glyph but the space has ink.
        assert!((33u8..127).all(|b| (0..CELL_W).any(|c| (0..CELL_H).any(|r| ink(b as char, c, r)))));
    }
}
