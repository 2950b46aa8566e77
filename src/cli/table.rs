//! Tables for the console: a header and columns aligned to their widest cell (numbers to the
//! right), the last column left ragged so long targets do not pad every line.

/// How a column lines up.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Render `rows` under `header`; each row has one cell per header column.
pub fn render(header: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let cells = |row: &[String], i: usize| row.get(i).map(String::as_str).unwrap_or("").to_string();
    let width: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter().map(|r| cells(r, i).chars().count()).chain([header[i].0.chars().count()]).max().unwrap_or(0)
        })
        .collect();
    let line = |values: Vec<String>| -> String {
        let last = values.len().saturating_sub(1);
        let mut out = String::new();
        for (i, v) in values.into_iter().enumerate() {
            let pad = width[i].saturating_sub(v.chars().count());
            if i > 0 {
                out.push_str("  ");
            }
            match header[i].1 {
                Align::Right => out.push_str(&format!("{}{v}", " ".repeat(pad))),
                Align::Left if i == last => out.push_str(&v),
                Align::Left => out.push_str(&format!("{v}{}", " ".repeat(pad))),
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|(h, _)| h.to_string()).collect());
    for r in rows {
        out += &line((0..header.len()).map(|i| cells(r, i)).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_under_their_header() {
        let rows = vec![
            vec!["sess_1".to_string(), "running".to_string(), "7".to_string(), "https://a".to_string()],
            vec!["sess_22".to_string(), "error".to_string(), "120".to_string(), "b".to_string()],
        ];
        let t = render(
            &[("ID", Align::Left), ("STATUS", Align::Left), ("TURN", Align::Right), ("TARGET", Align::Left)],
            &rows,
        );
        assert_eq!(t, "ID       STATUS   TURN  TARGET\nsess_1   running     7  https://a\nsess_22  error     120  b\n");
    }
}
