//! The README and `docs/` as a forge renders them (CommonMark): every fenced code block is closed
//! (an unclosed one swallows the rest of the page into one block), and every relative link names
//! a file that exists and, for a `#fragment`, a heading of that file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every Markdown file a reader of the repository meets.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("crates/domain/README.md")];
    for dir in ["docs", "docs/adr"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        files.extend(found);
    }
    files
}

fn parser(text: &str) -> Parser<'_> {
    Parser::new_ext(
        text,
        Options::ENABLE_TABLES | Options::ENABLE_HEADING_ATTRIBUTES,
    )
}

/// The anchors a forge gives the headings of `text`: lowercase, punctuation dropped but `-` and
/// `_`, spaces as `-`, a repeated one suffixed `-1`, `-2`...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut heading: Option<String> = None;
    for event in parser(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => {
                heading = Some(String::new());
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let title = heading.take().unwrap_or_default();
                let slug: String = title
                    .to_lowercase()
                    .chars()
                    .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                let n = seen.entry(slug.clone()).or_insert(0);
                anchors.insert(if *n == 0 {
                    slug.clone()
                } else {
                    format!("{slug}-{n}")
                });
                *n += 1;
            }
            _ => {}
        }
    }
    anchors
}

/// Whether `line` (trimmed) is a closing fence: three or more backticks, or tildes, and nothing
/// else (a fence line with text after it closes nothing).
fn closes(line: &str) -> bool {
    line.len() >= 3 && (line.chars().all(|c| c == '`') || line.chars().all(|c| c == '~'))
}

#[test]
fn every_fence_closes_and_every_relative_link_resolves() {
    let mut problems = Vec::new();
    let files = documents();
    assert!(files.len() > 20, "{files:?}");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let name = file
            .strip_prefix(root())
            .unwrap_or(file)
            .display()
            .to_string();
        for (event, range) in parser(&text).into_offset_iter() {
            match event {
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                    let block = text[range.clone()].trim_end();
                    let last = block.lines().last().unwrap_or_default().trim();
                    if !closes(last) {
                        let line = text[..range.start].lines().count() + 1;
                        problems.push(format!("{name}:{line}: a fence that never closes"));
                    }
                }
                Event::Start(Tag::Link { dest_url, .. }) => {
                    let dest = dest_url.to_string();
                    if dest.contains("://") || dest.starts_with("mailto:") {
                        continue;
                    }
                    let (path, fragment) = match dest.split_once('#') {
                        Some((path, fragment)) => (path, Some(fragment)),
                        None => (dest.as_str(), None),
                    };
                    let target = if path.is_empty() {
                        file.clone()
                    } else {
                        file.parent().unwrap().join(path)
                    };
                    if !target.exists() {
                        problems.push(format!("{name}: link to {dest}: no such file"));
                        continue;
                    }
                    if let Some(fragment) = fragment
                        && target.extension().is_some_and(|e| e == "md")
                        && !anchors(&std::fs::read_to_string(&target).unwrap()).contains(fragment)
                    {
                        problems.push(format!("{name}: link to {dest}: no such heading"));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn an_unclosed_fence_and_a_dead_link_are_found() {
    // The rules above bite: a closing fence with text after it closes nothing, and the rest of
    // the page is one code block.
    let text = "# A\n\n```\ncode\n``` text after\n\n## B\n";
    let (_, range) = parser(text)
        .into_offset_iter()
        .find(|(e, _)| matches!(e, Event::Start(Tag::CodeBlock(_))))
        .unwrap();
    assert!(
        !text[range].trim_end().ends_with("```"),
        "not closed: swallows the rest"
    );
    let closed = "# A\n\n```\ncode\n```\n\ntext after\n";
    let (_, range) = parser(closed)
        .into_offset_iter()
        .find(|(e, _)| matches!(e, Event::Start(Tag::CodeBlock(_))))
        .unwrap();
    assert!(closes(
        closed[range].trim_end().lines().last().unwrap().trim()
    ));
    assert!(!closes("``` text after") && !closes("``") && closes("````"));
    assert!(
        anchors("## 4b. Testing, rotating and recovering\n")
            .contains("4b-testing-rotating-and-recovering")
    );
    assert!(
        anchors("## The catch-up feed: polling `after`\n## The catch-up feed: polling `after`\n")
            .contains("the-catch-up-feed-polling-after-1")
    );
}
