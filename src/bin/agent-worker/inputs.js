// agent-worker special inputs: what a person writes into a date, time, number, range or colour
// field, as the value the field takes. Loaded before page.js (which sets the value with the
// page's input and change events); defines window.__acInputs once per document, in the
// helpers' isolated world. Pure: nothing here touches the page.
// Invariants: a value is given only where the written form has one reading (`03/05/2024` is
// March 5, as `/` dates are written month first; `05.03.2024` is day first; `05-03-2024` only
// when one order makes no date); a date is a real one (no February 30); anything else is null,
// and the caller says which forms are understood.
if (!window.__acInputs) { window.__acInputs = (() => {
  const SPECIAL = new Set(["date", "time", "datetime-local", "month", "week", "number", "range", "color"]);
  const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
  // How each kind is written, for a message when a form is not understood.
  const FORMS = {
    date: "2024-03-05, 03/05/2024 (month first), 05.03.2024 (day first) or March 5, 2024",
    time: "14:30, 14:30:15 or 2:30 pm",
    "datetime-local": "2024-03-05 14:30 (any date form, then a time)",
    month: "2024-03, 03/2024 or March 2024",
    week: "2024-W10",
    number: "a number: 42, -1.5, 1,234.5",
    range: "a number: 42, -1.5",
    color: "#ff8800, #f80 or a colour name",
  };
  const norm = s => String(s ?? "").replace(/\s+/g, " ").trim();
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  const monthOf = word => {
    const i = MONTHS.indexOf(String(word).slice(0, 3).toLowerCase());
    return i < 0 ? null : i + 1;
  };
  function ymd(y, m, d) {
    if (!m || !d) return null;
    const t = new Date(Date.UTC(y, m - 1, d));
    if (t.getUTCFullYear() !== y || t.getUTCMonth() !== m - 1 || t.getUTCDate() !== d) return null;
    return `${pad(y, 4)}-${pad(m)}-${pad(d)}`;
  }
  function date(s) {
    s = norm(s).replace(/,/g, " ").replace(/\s+/g, " ");
    let m = s.match(/^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$/);
    if (m) return ymd(+m[1], +m[2], +m[3]);
    m = s.match(/^(\d{1,2})([/.-])(\d{1,2})\2(\d{4})$/);
    if (m) {
      const [a, b, y] = [+m[1], +m[3], +m[4]];
      const monthFirst = ymd(y, a, b), dayFirst = ymd(y, b, a);
      if (monthFirst && dayFirst && a !== b) return m[2] === "/" ? monthFirst : m[2] === "." ? dayFirst : null;
      return monthFirst || dayFirst;
    }
    m = s.match(/^(\d{1,2})(?:st|nd|rd|th)? ([a-z]+)\.? (\d{4})$/i);
    if (m) return ymd(+m[3], monthOf(m[2]), +m[1]);
    m = s.match(/^([a-z]+)\.? (\d{1,2})(?:st|nd|rd|th)? (\d{4})$/i);
    if (m) return ymd(+m[3], monthOf(m[1]), +m[2]);
    return null;
  }
  function time(s) {
    s = norm(s).toLowerCase();
    const m = s.match(/^(\d{1,2})(?:[:.h](\d{2}))?(?::(\d{2}))?\s*(?:([ap])\.?\s*m\.?)?$/);
    if (!m || (!m[2] && !m[4])) return null;
    let h = +m[1];
    const min = +(m[2] || 0), sec = m[3];
    if (m[4]) {
      if (h < 1 || h > 12) return null;
      h = h % 12 + (m[4] === "p" ? 12 : 0);
    }
    if (h > 23 || min > 59 || (sec !== undefined && +sec > 59)) return null;
    return `${pad(h)}:${pad(min)}` + (sec !== undefined ? `:${sec}` : "");
  }
  function dateTime(s) {
    const m = norm(s).match(/^(.*?)(?:T|,? (?:at )?)(\d{1,2}(?:[:.]\d{2}){0,2}\s*(?:[ap]\.?\s*m\.?)?)$/i);
    if (!m) return null;
    const d = date(m[1]), t = time(m[2]);
    return d && t ? `${d}T${t}` : null;
  }
  function month(s) {
    s = norm(s).replace(/,/g, "");
    let m = s.match(/^(\d{4})[-/.](\d{1,2})$/) || s.match(/^(\d{1,2})[-/.](\d{4})$/);
    if (m) {
      const [y, mo] = m[1].length === 4 ? [+m[1], +m[2]] : [+m[2], +m[1]];
      return mo >= 1 && mo <= 12 ? `${pad(y, 4)}-${pad(mo)}` : null;
    }
    m = s.match(/^([a-z]+)\.? (\d{4})$/i);
    const mo = m && monthOf(m[1]);
    return mo ? `${m[2]}-${pad(mo)}` : null;
  }
  // `1,234.5` and `1 234`, `1,5` (a decimal comma): the number as the field writes it.
  function number(s) {
    s = norm(s).replace(/[\s_]/g, "");
    if (/^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) s = s.replace(/,/g, "");
    else if (/^[-+]?\d+,\d+$/.test(s)) s = s.replace(",", ".");
    if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s) || !isFinite(Number(s))) return null;
    return String(Number(s));
  }
  function color(s) {
    s = norm(s);
    const ctx = document.createElement("canvas").getContext("2d");
    if (!ctx || !s) return null;
    ctx.fillStyle = "#010203";
    ctx.fillStyle = s;
    const got = String(ctx.fillStyle);
    if (got === "#010203" && !/^#?010203$/i.test(s)) return null;
    return /^#[0-9a-f]{6}$/i.test(got) ? got.toLowerCase() : null;
  }
  const week = s => (norm(s).match(/^(\d{4})-?w(\d{1,2})$/i) || null) && norm(s).replace(/^(\d{4})-?w(\d{1,2})$/i, (_, y, w) => `${y}-W${pad(w)}`);
  const CONVERT = {date, time, "datetime-local": dateTime, month, week, number, range: number, color};
  // Whether `el` is a field whose value is set rather than typed key by key.
  const special = el => !!el && el.tagName === "INPUT" && SPECIAL.has(el.type);
  // The value `text` gives a field of kind `type`, or null.
  const convert = (type, text) => (CONVERT[type] ? CONVERT[type](text) : null);
  return {special, convert, forms: type => FORMS[type] || ""};
})(); }
