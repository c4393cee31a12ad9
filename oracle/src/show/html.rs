//! The page shell every HTML page of the harness shares: escaping, one inline style sheet,
//! and a small inline script that turns any script error into the page's title (so that a
//! headless browser check sees it: `ci/pages`). Pages are self-contained: no network, no
//! external file, pictures as inline SVG.

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out += "&amp;",
            '<' => out += "&lt;",
            '>' => out += "&gt;",
            '"' => out += "&quot;",
            '\'' => out += "&#39;",
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #1d1d1f; background: #fff; max-width: 110em; }
h1 { font-size: 1.4em; margin-bottom: .2em; }
h2 { font-size: 1.1em; margin-top: 1.6em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
pre, code, td.mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; border-radius: 4px; margin: .3em 0; }
table { border-collapse: collapse; margin: .4em 0; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
tr.diff td { background: #ffe3e3; }
tr.diff td.mark { color: #b00; font-weight: bold; }
.cols { display: flex; gap: 1em; align-items: flex-start; flex-wrap: wrap; }
.cols > div { flex: 1 1 30em; min-width: 0; overflow-x: auto; }
.line { white-space: pre; display: block; padding: 0 .3em; }
.del { background: #ffd7d5; }
.ins { background: #ccffd8; }
.hit { background: #fff3a0; font-weight: bold; }
.note { color: #555; font-style: italic; }
.bad { color: #b00; font-weight: bold; }
.good { color: #070; font-weight: bold; }
.pic svg { max-width: 100%; height: auto; }
.small { font-size: .85em; color: #555; }
"#;

/// A whole page: `title` in the head and as the first heading, `body` (HTML) below it.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n\
         <script>window.onerror = function (m) {{ document.title = 'SCRIPT ERROR: ' + m; }};</script>\n\
         <style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n{body}\n</body>\n</html>\n",
        t = esc(title)
    )
}

/// A `<pre>` block of `text`.
pub fn pre(text: &str) -> String {
    format!("<pre>{}</pre>\n", esc(text))
}

/// A table with a header row; cells are HTML already. `marked[k]` marks row `k` as a
/// difference.
pub fn table(head: &[&str], rows: &[Vec<String>], marked: &[bool]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in head {
        out += &format!("<th>{}</th>", esc(h));
    }
    out += "</tr>\n";
    for (k, r) in rows.iter().enumerate() {
        let class = if marked.get(k).copied().unwrap_or(false) { " class=\"diff\"" } else { "" };
        out += &format!("<tr{class}>");
        for c in r {
            out += &format!("<td class=\"mono\">{c}</td>");
        }
        out += "</tr>\n";
    }
    out + "</table>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        let p = page("a < b", "<p>x</p>");
        assert!(p.contains("<title>a &lt; b</title>") && p.contains("<h1>a &lt; b</h1>"));
    }
}
