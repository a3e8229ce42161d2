//! The floors of each crate, checked against the lists `ARCHITECTURE.md` states: a module
//! imports only from floors below its own, and every module of the crate is on the list (no
//! more, no fewer), so the map a newcomer reads first cannot drift from the code.
//!
//! A list is a fenced block with the info string `floors <crate folder>`, one floor per line,
//! lowest first: `1: error, keys` then `2: limits, catalog/kinds`. A room is a module by its path
//! (`catalog/kinds` or `catalog::kinds`; `catalog` alone is `catalog/mod.rs`), or a folder with
//! everything in it written with a trailing slash (`handlers/`). The crate root is the front
//! door, above every floor, and is not listed. This module does not build the import graph
//! (`module_graph` in tidy.rs does).

use super::graph::module_graph;
use super::{read, root, workspace_crates};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each crate's stated floors, by crate folder name: room → floor. Problems with the lists
/// themselves (a line that is not `N: rooms`, a room listed twice) come back too.
pub fn stated_floors(markdown: &str) -> (BTreeMap<String, BTreeMap<String, usize>>, Vec<String>) {
    let mut lists = BTreeMap::new();
    let mut problems = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let Some(crate_name) = line.trim().strip_prefix("```floors ") else {
            continue;
        };
        let mut rooms = BTreeMap::new();
        for line in lines.by_ref().take_while(|line| line.trim() != "```") {
            let Some((floor, names)) = line.split_once(':') else {
                problems.push(format!("{crate_name}: `{line}` is not `N: rooms`"));
                continue;
            };
            let Ok(floor) = floor.trim().parse::<usize>() else {
                problems.push(format!(
                    "{crate_name}: `{line}` does not start with a floor number"
                ));
                continue;
            };
            for name in names
                .split(',')
                .map(room_name)
                .filter(|name| !name.is_empty())
            {
                if rooms.insert(name.clone(), floor).is_some() {
                    problems.push(format!("{crate_name}: `{name}` is listed twice"));
                }
            }
        }
        lists.insert(crate_name.trim().to_string(), rooms);
    }
    (lists, problems)
}

/// A room as written in a list, spelled the one way the check compares: `a/b`, `a/` for a
/// whole folder.
fn room_name(written: &str) -> String {
    let name = written.trim().trim_matches('`').replace("::", "/");
    name.strip_suffix("/mod")
        .map_or(name.clone(), str::to_string)
}

/// The room a module belongs to: its own entry, else the nearest folder listed whole.
fn room_of(module: &str, rooms: &BTreeMap<String, usize>) -> Option<String> {
    let path = module.replace("::", "/");
    if rooms.contains_key(&path) {
        return Some(path);
    }
    let mut parts: Vec<&str> = path.split('/').collect();
    while !parts.is_empty() {
        let folder = format!("{}/", parts.join("/"));
        if rooms.contains_key(&folder) {
            return Some(folder);
        }
        parts.pop();
    }
    None
}

/// Where a crate's import graph disagrees with its stated floors.
pub fn floor_problems(
    graph: &BTreeMap<String, BTreeSet<String>>,
    rooms: &BTreeMap<String, usize>,
) -> Vec<String> {
    let mut problems = BTreeSet::new();
    let mut used = BTreeSet::new();
    for (module, targets) in graph.iter().filter(|(module, _)| !module.is_empty()) {
        let Some(room) = room_of(module, rooms) else {
            problems.insert(format!(
                "`{}` is missing from the list",
                module.replace("::", "/")
            ));
            continue;
        };
        used.insert(room.clone());
        for target in targets {
            if target.is_empty() {
                problems.insert(format!(
                    "`{room}` imports the crate root, which is only a front door"
                ));
                continue;
            }
            let Some(target_room) = room_of(target, rooms) else {
                continue;
            };
            let (floor, target_floor) = (rooms[&room], rooms[&target_room]);
            if target_room != room && target_floor >= floor {
                problems.insert(format!(
                    "`{room}` (floor {floor}) imports `{target_room}` (floor {target_floor})"
                ));
            }
        }
    }
    for room in rooms.keys().filter(|room| !used.contains(*room)) {
        problems.insert(format!("`{room}` is listed but no such module exists"));
    }
    problems.into_iter().collect()
}

/// The floors the imports give each room (one above the highest room it imports), as a list
/// in the stated format: what a list that passes could say.
pub fn computed_floors(
    graph: &BTreeMap<String, BTreeSet<String>>,
    rooms: &BTreeMap<String, usize>,
) -> String {
    let room = |module: &str| room_of(module, rooms).unwrap_or_else(|| module.replace("::", "/"));
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, targets) in graph.iter().filter(|(module, _)| !module.is_empty()) {
        let entry = imports.entry(room(module)).or_default();
        entry.extend(targets.iter().filter(|t| !t.is_empty()).map(|t| room(t)));
    }
    fn floor(
        room: &str,
        imports: &BTreeMap<String, BTreeSet<String>>,
        known: &mut BTreeMap<String, usize>,
        visiting: &mut BTreeSet<String>,
    ) -> usize {
        if let Some(&floor) = known.get(room) {
            return floor;
        }
        if !visiting.insert(room.to_string()) {
            // A cycle between rooms: the cycle check reports it; count it as the ground.
            return 0;
        }
        let below = imports
            .get(room)
            .into_iter()
            .flatten()
            .filter(|t| *t != room);
        let floor = 1 + below
            .map(|target| floor(target, imports, known, visiting))
            .max()
            .unwrap_or(0);
        known.insert(room.to_string(), floor);
        floor
    }
    let mut known = BTreeMap::new();
    let mut by_floor: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for room in imports.keys() {
        let at = floor(room, &imports, &mut known, &mut BTreeSet::new());
        by_floor.entry(at).or_default().push(room.clone());
    }
    by_floor
        .iter()
        .map(|(floor, rooms)| format!("{floor}: {}", rooms.join(", ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn each_crate_keeps_the_floors_architecture_md_states() {
    let (lists, mut problems) = stated_floors(&read(&root().join("ARCHITECTURE.md")));
    let mut suggestions = Vec::new();
    let mut unknown: BTreeSet<&String> = lists.keys().collect();
    for (source, root_file) in workspace_crates() {
        let crate_name = source
            .parent()
            .and_then(Path::file_name)
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        unknown.remove(&crate_name);
        let graph = module_graph(&source, root_file);
        let Some(rooms) = lists.get(&crate_name) else {
            problems.push(format!(
                "ARCHITECTURE.md has no ```floors {crate_name} block"
            ));
            suggestions.push(format!(
                "```floors {crate_name}\n{}\n```",
                computed_floors(&graph, &BTreeMap::new())
            ));
            continue;
        };
        let found = floor_problems(&graph, rooms);
        if !found.is_empty() {
            problems.extend(found.into_iter().map(|p| format!("{crate_name}: {p}")));
            suggestions.push(format!(
                "```floors {crate_name}\n{}\n```",
                computed_floors(&graph, rooms)
            ));
        }
    }
    problems.extend(
        unknown.into_iter().map(|name| {
            format!("ARCHITECTURE.md lists floors of `{name}`, not a workspace member")
        }),
    );
    assert!(
        problems.is_empty(),
        "the floors in ARCHITECTURE.md disagree with the imports: {problems:#?}\n\
         the floors the imports give (rename or merge rooms as the map needs):\n{}",
        suggestions.join("\n")
    );
}

#[test]
fn the_floor_check_sees_an_import_from_above_and_a_list_that_drifted() {
    let dir = std::env::temp_dir().join(format!("lethedb-tidy-floors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("c")).expect("temp dir");
    let files = [
        (
            "lib.rs",
            "//! r\nmod a;\nmod b;\nmod c;\nmod e;\npub use a::Alpha;\n",
        ),
        ("a.rs", "//! a\npub struct Alpha;\n"),
        (
            "b.rs",
            "//! b\nuse crate::Alpha;\nuse crate::c::d::Delta;\n",
        ),
        ("c/mod.rs", "//! c\npub mod d;\n"),
        ("c/d.rs", "//! d\nuse crate::a::Alpha;\npub struct Delta;\n"),
        ("e.rs", "//! e\nuse crate::b;\n"),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let graph = module_graph(&dir, "lib");
    let _ = std::fs::remove_dir_all(&dir);
    let markdown = "text\n```floors planted\n1: a\n2: b, c\n3: c::d, z\n```\n";
    let (lists, problems) = stated_floors(markdown);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        floor_problems(&graph, &lists["planted"]),
        [
            "`b` (floor 2) imports `c/d` (floor 3)",
            "`e` is missing from the list",
            "`z` is listed but no such module exists",
        ]
    );
    // The folder as one room: its own modules may import each other.
    let (lists, _) = stated_floors("```floors planted\n1: a\n2: c/\n3: b\n4: e\n```\n");
    assert!(floor_problems(&graph, &lists["planted"]).is_empty());
    assert_eq!(
        computed_floors(&graph, &BTreeMap::new()),
        "1: a, c\n2: c/d\n3: b\n4: e"
    );
    let (_, problems) = stated_floors("```floors bad\nfirst: a\n2 b\n3: a, a\n```\n");
    assert_eq!(problems.len(), 3, "{problems:?}");
}
