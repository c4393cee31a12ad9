//! The campaign's page (`index.html` in its output folder), written when a campaign ends:
//! its configuration and counts, throughput over time (an SVG line chart of the summary's
//! samples), the share of programs in which each pass counter fired (an SVG bar chart,
//! with a legend of readable names), the validator's answers per pass, and the signatures
//! with their counts, each linking to the page of its representative finding, written
//! beside the finding by [`super::explain`].
//!
//! The campaign itself never imports this room: the command line calls
//! [`write_campaign_pages`] after the campaign returns.

use super::html::{esc, page, table};
use super::{explain, legend};
use crate::campaign::{ConfigRecord, Summary};
use crate::exec::emu::Emulator;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The name of the campaign page in the output folder.
pub const INDEX_FILE: &str = "index.html";

/// One signature's row: its representative's page (a path relative to the folder), or
/// why there is none.
pub struct SignatureRow {
    pub signature: String,
    pub count: u64,
    pub seed: u64,
    pub finding: String,
    pub reduced: Option<String>,
    pub page: Result<String, String>,
}

/// Writes the page of each signature's representative beside it, then `index.html` in
/// `dir`; returns the index's path. A finding page that cannot be made is a line in the
/// index saying why, not a failure of the whole.
pub fn write_campaign_pages(dir: &Path, s: &Summary, config: &ConfigRecord, emu: &mut Emulator) -> std::io::Result<PathBuf> {
    let rel = |p: &Path| p.strip_prefix(dir).unwrap_or(p).display().to_string();
    let mut rows = vec![];
    for g in s.signatures() {
        let path = &g.representative.path;
        let page = match explain::explain(path, emu) {
            Ok(html) => {
                let out = path.with_extension("html");
                crate::campaign::write_atomic(&out, html.as_bytes()).map_err(|e| std::io::Error::other(e.to_string()))?;
                Ok(rel(&out))
            }
            Err(e) => Err(e.to_string()),
        };
        rows.push(SignatureRow {
            signature: g.signature.clone(),
            count: g.count,
            seed: g.representative.seed,
            finding: rel(path),
            reduced: g.reduced.as_deref().map(rel),
            page,
        });
    }
    let out = dir.join(INDEX_FILE);
    crate::campaign::write_atomic(&out, index_page(s, config, &rows).as_bytes()).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(out)
}

/// The campaign page.
pub fn index_page(s: &Summary, config: &ConfigRecord, rows: &[SignatureRow]) -> String {
    let secs = s.elapsed.as_secs_f64();
    let mut body = String::new();
    let shard = if config.shard == "0/1" { String::new() } else { format!(", shard {}", esc(&config.shard)) };
    let _ = writeln!(
        body,
        "<p>Profile <b>{}</b>, first seed {}{shard}, {} jobs, validator on {}‰ of seeds. Output folder <code>{}</code>.</p>",
        esc(&config.profile),
        config.seed,
        config.jobs,
        config.verify_permille,
        esc(&config.out)
    );
    let verdict = if s.findings.is_empty() { "<span class=\"good\">no finding</span>".to_string() } else { format!("<span class=\"bad\">{} finding(s)</span>", s.findings.len()) };
    let _ = writeln!(
        body,
        "<p>{} seeds, {} runs: {} agreed at every stage, {} invalid (not compared), {} beyond a harness limit; {verdict}. {:.1} s of testing, {:.0} cases/s, {:.0} runs/s.</p>",
        s.cases,
        s.runs,
        s.agreed,
        s.invalid,
        s.limited,
        secs,
        s.cases as f64 / secs.max(1e-9),
        s.runs as f64 / secs.max(1e-9)
    );
    body += &signatures_section(rows);
    body += "<h2>Throughput over time</h2>\n";
    body += &throughput_chart(&s.samples);
    body += "<h2>Share of programs in which each pass counter fired</h2>\n";
    body += &fired_chart(s);
    body += &validator_section(s);
    body += &legend_section(s);
    page("Campaign", &body)
}

fn signatures_section(rows: &[SignatureRow]) -> String {
    let out = format!("<h2>Signatures ({})</h2>\n", rows.len());
    if rows.is_empty() {
        return out + "<p class=\"good\">No finding.</p>\n";
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let page = match &r.page {
                Ok(p) => format!("<a href=\"{}\">explained</a>", esc(p)),
                Err(e) => format!("<span class=\"bad\">no page: {}</span>", esc(e)),
            };
            let reduced = r.reduced.as_ref().map_or("(not reduced)".to_string(), |p| format!("<a href=\"{}\">{}</a>", esc(p), esc(p)));
            vec![esc(&r.signature), r.count.to_string(), r.seed.to_string(), format!("<a href=\"{}\">{}</a>", esc(&r.finding), esc(&r.finding)), reduced, page]
        })
        .collect();
    out + &table(&["signature", "findings", "first seed", "finding file", "reduced", "page"], &cells, &[])
}

/// An SVG line chart of cases per second: a step per interval between consecutive
/// samples, at the interval's rate.
fn throughput_chart(samples: &[(f64, u64)]) -> String {
    let steps: Vec<(f64, f64, f64)> = samples
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| (w[0].0, w[1].0, w[1].1.saturating_sub(w[0].1) as f64 / (w[1].0 - w[0].0)))
        .collect();
    let points: Vec<(f64, f64)> = steps.iter().flat_map(|&(t0, t1, v)| [(t0, v), (t1, v)]).collect();
    if points.is_empty() {
        return "<p class=\"note\">Too short a campaign for a chart (fewer than two samples, a second or more apart).</p>\n".into();
    }
    let (w, h, left, bottom, top, right) = (720.0, 240.0, 60.0, 30.0, 10.0, 20.0);
    let tmax = points.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
    let ymax = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.1;
    let x = |t: f64| left + (w - left - right) * t / tmax;
    let y = |v: f64| top + (h - top - bottom) * (1.0 - v / ymax);
    let mut svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"cases per second over time\">\n");
    let _ = writeln!(svg, "<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>", w - left - right, h - top - bottom);
    for k in 0..=4 {
        let v = ymax * k as f64 / 4.0;
        let _ = writeln!(svg, "<text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{v:.0}</text>", left - 4.0, y(v) + 3.0);
        let t = tmax * k as f64 / 4.0;
        let digits = if tmax < 10.0 { 1 } else { 0 };
        let _ = writeln!(svg, "<text x=\"{:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{t:.digits$} s</text>", x(t), h - bottom + 14.0);
    }
    let _ = writeln!(svg, "<text x=\"12\" y=\"{}\" font-size=\"10\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">cases/s</text>", h / 2.0, h / 2.0);
    let line: Vec<String> = points.iter().map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v))).collect();
    let _ = writeln!(svg, "<polyline fill=\"none\" stroke=\"#1f6feb\" stroke-width=\"2\" points=\"{}\"/>", line.join(" "));
    svg += "</svg>\n";
    format!("<div class=\"pic\">{svg}</div><p class=\"small\">{} samples; the rate between consecutive samples.</p>\n", samples.len())
}

/// An SVG bar chart: one bar per (pass, counter), the share of cases it fired in.
fn fired_chart(s: &Summary) -> String {
    let bars: Vec<(String, f64)> = s
        .fired
        .iter()
        .flat_map(|(pass, st)| st.keys().map(move |k| (pass.clone(), k.clone())))
        .map(|(pass, k)| (format!("{pass}: {k}"), s.fired_percent(&pass, &k)))
        .collect();
    if bars.is_empty() {
        return "<p class=\"note\">No counter fired (or no case ran).</p>\n".into();
    }
    let (label_w, bar_w, row) = (260.0, 400.0, 16.0);
    let h = row * bars.len() as f64 + 10.0;
    let mut svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{h}\" role=\"img\" aria-label=\"share of programs per counter\">\n", label_w + bar_w + 60.0);
    for (k, (label, pct)) in bars.iter().enumerate() {
        let y = 5.0 + row * k as f64;
        let _ = writeln!(svg, "<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" font-family=\"monospace\">{}</text>", label_w - 6.0, y + 11.0, esc(label));
        let _ = writeln!(svg, "<rect x=\"{label_w}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{}\" fill=\"#2da44e\"/>", y + 2.0, bar_w * pct / 100.0, row - 4.0);
        let _ = writeln!(svg, "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{pct:.1}%</text>", label_w + bar_w * pct / 100.0 + 4.0, y + 11.0);
    }
    svg += "</svg>\n";
    format!("<div class=\"pic\">{svg}</div><p class=\"small\">Share of the {} programs in which the counter was non-zero; the legend below says what each counts.</p>\n", s.cases)
}

fn validator_section(s: &Summary) -> String {
    let mut out = "<h2>The Z3 validator's answers</h2>\n".to_string();
    if s.validator.is_empty() {
        return out + "<p class=\"note\">The validator checked no seed in this campaign (its share of seeds is small, or 0).</p>\n";
    }
    let kinds = ["proved", "bounded", "unknown", "counterexample", "disagreement"];
    let mut rows = vec![];
    let mut marked = vec![];
    let passes = &s.validator.passes;
    for pass in passes.iter().map(Some).chain([None]) {
        // One pass's counts, or (the last row) every pass's.
        let n = |k: &str| -> u64 {
            let count = |p: &crate::campaign::answers::PassAnswers| p.kinds.get(k).copied().unwrap_or(0);
            match pass {
                Some(p) => count(p),
                None => passes.iter().map(count).sum(),
            }
        };
        let mut row = vec![esc(pass.map_or("all passes", |p| p.pass.as_str()))];
        row.extend(kinds.iter().map(|k| n(k).to_string()));
        marked.push(n("counterexample") + n("disagreement") > 0);
        rows.push(row);
    }
    out += &table(&["pass", "proved", "proved (bounded)", "unknown", "counterexample", "encoder disagreement"], &rows, &marked);
    out += "<p class=\"small\">Latencies, as the console prints them:</p>\n<pre>";
    for l in s.validator_lines() {
        out += &esc(&l);
        out.push('\n');
    }
    out + "</pre>\n"
}

fn legend_section(s: &Summary) -> String {
    let total = |pass: &str, k: &str| s.pass_stats.iter().find(|(p, _)| p == pass).and_then(|(_, st)| st.get(k)).copied().unwrap_or(0);
    let mut rows = vec![];
    for (pass, k, m) in legend::entries() {
        rows.push(vec![esc(pass), esc(k), esc(m), total(pass, k).to_string(), format!("{:.1}%", s.fired_percent(pass, k))]);
    }
    // Counters the legend does not know yet, so that none is silently dropped.
    for (pass, st) in &s.pass_stats {
        for (k, v) in st {
            if legend::meaning(pass, k).is_none() {
                let m = "<span class=\"note\">(no description)</span>".to_string();
                rows.push(vec![esc(pass), esc(k), m, v.to_string(), format!("{:.1}%", s.fired_percent(pass, k))]);
            }
        }
    }
    "<h2>Legend: what each counter counts</h2>\n<p class=\"small\">Totals and shares are of <code>cprop</code> in the pipeline; <code>cprop on HIR</code> has the same counters (see the bar chart).</p>\n".to_string()
        + &table(&["pass", "counter", "meaning", "total", "fired in"], &rows, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rates worked out by hand: 10 cases in the first 2 s (5/s), 30 in the next 3 (10/s).
    #[test]
    fn the_chart_plots_the_rate_between_samples() {
        let svg = throughput_chart(&[(0.0, 0), (2.0, 10), (5.0, 40)]);
        // x spans 60..700 over 5 s, y spans 10..210 over 0..11 cases/s.
        assert!(svg.contains("points=\"60.0,119.1 316.0,119.1 316.0,28.2 700.0,28.2\""), "{svg}");
        assert!(throughput_chart(&[(1.0, 3)]).contains("Too short"));
    }
}
