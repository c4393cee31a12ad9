//! Control-flow graphs as pictures: a function's CFG as Graphviz `dot` text (one box per
//! block holding its phis, statements and terminator as the text format prints them, one
//! arrow per successor, labelled `then`/`else`/case values), and that text turned into an
//! SVG picture by the `dot` program when it is installed.
//!
//! The printer works on any stage's IR (HIR or SSA), so `tandem compile --emit dot` and
//! the finding pages draw the same graph. It lives here rather than in `core` because
//! only the harness draws; `core`'s text printer stays the one text format.

use std::fmt::Write;
use std::io::Write as _;
use tandem_core::ir::{Function, Terminator};
use tandem_core::text::printer::{stmt_to_string, write_phi, write_terminator};

/// The CFG of `f` as a `digraph` in dot's language. Block boxes list their code left
/// aligned; the entry block has a bold border.
pub fn function_dot(f: &Function) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", escape(&format!("%{}", f.name)));
    out += "  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
    out += "  edge [fontname=\"monospace\", fontsize=9];\n";
    for (k, &b) in f.layout.iter().enumerate() {
        let mut lines = vec![format!("{b}:")];
        let data = &f.blocks[b];
        for phi in &data.phis {
            let mut s = String::new();
            let _ = write_phi(&mut s, f, phi);
            lines.push(format!("  {s}"));
        }
        for &s in &data.stmts {
            lines.push(format!("  {}", stmt_to_string(f, s)));
        }
        let mut t = String::new();
        let _ = write_terminator(&mut t, f, &data.term);
        lines.push(format!("  {t}"));
        let label: String = lines.iter().map(|l| format!("{}\\l", escape(l))).collect();
        let style = if k == 0 { ", style=bold" } else { "" };
        let _ = writeln!(out, "  {b} [label=\"{label}\"{style}];");
    }
    for &b in &f.layout {
        for (to, label) in edges(&f.blocks[b].term) {
            let label = label.map_or(String::new(), |l| format!(" [label=\"{}\"]", escape(&l)));
            let _ = writeln!(out, "  {b} -> {to}{label};");
        }
    }
    out += "}\n";
    out
}

/// The successors of a terminator with the label of each arrow.
fn edges(t: &Terminator) -> Vec<(tandem_core::ir::Block, Option<String>)> {
    match t {
        Terminator::Jump(b) => vec![(*b, None)],
        Terminator::Branch { then_dest, else_dest, .. } => {
            vec![(*then_dest, Some("then".into())), (*else_dest, Some("else".into()))]
        }
        Terminator::Return(_) => vec![],
        Terminator::Switch { default, cases, .. } => {
            let mut v: Vec<_> = cases.iter().map(|(k, b)| (*b, Some(k.to_string()))).collect();
            v.push((*default, Some("default".into())));
            v
        }
    }
}

/// A string as the inside of a dot double-quoted string.
fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out += "\\n",
            _ => out.push(c),
        }
    }
    out
}

/// Why a picture could not be drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrawError {
    /// No `dot` program on the `PATH` (Graphviz is installed by `ci/deps`).
    Missing,
    /// `dot` ran and failed: its message.
    Failed(String),
}

impl std::fmt::Display for DrawError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DrawError::Missing => f.write_str("Graphviz `dot` is not installed here (ci/deps installs it), so no picture"),
            DrawError::Failed(m) => write!(f, "Graphviz `dot` failed: {m}"),
        }
    }
}

/// Renders dot text to an SVG element (the XML prolog and doctype removed, so that it
/// can be inlined in an HTML page).
pub fn to_svg(dot: &str) -> Result<String, DrawError> {
    let child = std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(DrawError::Missing),
        Err(e) => return Err(DrawError::Failed(e.to_string())),
    };
    let mut stdin = child.stdin.take().expect("piped");
    // Written from a thread, so that a large graph cannot fill both pipes at once.
    let text = dot.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().map_err(|e| DrawError::Failed(e.to_string()))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(DrawError::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    let svg = String::from_utf8_lossy(&out.stdout);
    match svg.find("<svg") {
        Some(i) => Ok(svg[i..].to_string()),
        None => Err(DrawError::Failed("no <svg> element in its output".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A diamond: four boxes, four arrows with the branch's labels, code escaped.
    #[test]
    fn a_diamond_has_a_box_per_block_and_an_arrow_per_edge() {
        let m = tandem_core::text::parse_module(
            "function %f(i32 %a) -> i32 {\n    local i32 %x\nb0:\n    br %a, b1, b2\nb1:\n    %x = 1\n    jump b3\nb2:\n    %x = 2\n    jump b3\nb3:\n    ret %x\n}\n",
        )
        .expect("parses");
        let dot = function_dot(&m.0.functions[0]);
        assert!(dot.starts_with("digraph \"%f\" {"), "{dot}");
        assert_eq!(dot.matches("[label=\"b").count(), 4, "{dot}");
        assert!(dot.contains("b0 -> b1 [label=\"then\"];"), "{dot}");
        assert!(dot.contains("b0 -> b2 [label=\"else\"];"), "{dot}");
        assert!(dot.contains("b1 -> b3;") && dot.contains("b2 -> b3;"), "{dot}");
        assert!(dot.contains("  %x = 1\\l"), "{dot}");
        assert!(dot.contains("style=bold"), "{dot}");
    }

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(escape("a\"b\\c"), "a\\\"b\\\\c");
    }
}
