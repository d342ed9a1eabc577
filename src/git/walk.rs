//! The ids of a tree's files, read without their contents. A branch's cluster directory holds
//! tens of thousands of files in thousands of trees: the first trees are read one by one until
//! there are enough left to read side by side (each reader opens the repository again: a git2
//! repository is not shared between threads).

use super::pack::{BLOB_MODE, TREE_MODE, id_of, push_tree_entry, usable_name};
use git2::{ObjectType, Oid, Repository, Tree};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// How many trees wait to be read before they are read side by side.
const SPLIT: usize = 32;

/// Ids by path: of files (blobs) or of directories (trees).
type Ids = Vec<(String, Oid)>;

/// The blob id of every file under `prefix` (a directory path, no trailing slash) in `tree`,
/// by full path, without reading the blobs. `trees`, when given, receives the id of every
/// directory at or below `prefix` that is *plain*, by path: it holds at least one entry, and
/// only regular files (mode `100644`) and plain directories, so the tree of its files is that
/// tree exactly (a commit takes it as it is when none of them changed).
///
/// # Errors
///
/// A tree below `prefix` cannot be read.
pub(crate) fn file_ids(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &str,
    ids: &mut BTreeMap<String, Oid>,
    trees: Option<&mut HashMap<String, Oid>>,
) -> Result<(), git2::Error> {
    let Ok(entry) = tree.get_path(std::path::Path::new(prefix)) else { return Ok(()) };
    if entry.kind() != Some(ObjectType::Tree) {
        return Ok(());
    }
    let (found, plain) = read_all(repo, entry.id(), prefix)?;
    extend_ids(ids, found);
    if let Some(trees) = trees {
        trees.extend(plain);
    }
    Ok(())
}

/// Adds `found` (sorted by path) to `ids`: into an empty map, built from the sorted whole rather
/// than inserted one by one.
pub(crate) fn extend_ids(ids: &mut BTreeMap<String, Oid>, found: Ids) {
    if ids.is_empty() {
        *ids = found.into_iter().collect();
    } else {
        ids.extend(found);
    }
}

/// A tree of the walk: where it is, whether every name on its path is UTF-8 (its path is then
/// its own, not a lossy one another tree may share), and whether it is plain so far.
struct Node {
    path: String,
    id: Oid,
    parent: Option<usize>,
    named: bool,
    plain: bool,
}

/// Subtrees to read: their paths, ids and whether their paths are their own.
type Subtrees = Vec<(String, Oid, bool)>;

/// The files of tree `root` at `path` and its plain trees.
fn read_all(repo: &Repository, root: Oid, path: &str) -> Result<(Ids, Ids), git2::Error> {
    let (mut ids, mut plain) = (Vec::new(), Vec::new());
    let mut nodes = vec![Node { path: path.to_owned(), id: root, parent: None, named: true, plain: true }];
    let mut next = 0;
    while next < nodes.len() && nodes.len() - next < SPLIT {
        let mut subtrees = Vec::new();
        let node = &nodes[next];
        nodes[next].plain = read_one(&repo.find_tree(node.id)?, &node.path, node.named, &mut ids, &mut subtrees);
        nodes.extend(subtrees.into_iter().map(|(path, id, named)| Node { path, id, parent: Some(next), named, plain: true }));
        next += 1;
    }
    let at = repo.path();
    let rest: Vec<(Ids, Ids, bool)> = nodes[next..]
        .par_iter()
        .map_init(
            || Repository::open(at),
            |repo, node| {
                let repo = repo.as_ref().map_err(|e| git2::Error::new(e.code(), e.class(), e.message()))?;
                let (mut ids, mut plain) = (Vec::new(), Vec::new());
                let whole = read_below(repo, (node.id, &node.path, node.named), &mut ids, &mut plain)?;
                Ok((ids, plain, whole))
            },
        )
        .collect::<Result<_, git2::Error>>()?;
    for ((found, trees, whole), node) in rest.into_iter().zip(next..) {
        ids.extend(found);
        plain.extend(trees);
        nodes[node].plain = whole;
    }
    // NB: a tree comes after its parent, so each is final before it is passed up.
    for index in (0..nodes.len()).rev() {
        match (nodes[index].plain, nodes[index].parent) {
            (false, Some(parent)) => nodes[parent].plain = false,
            (true, _) if index < next && nodes[index].named => plain.push((nodes[index].path.clone(), nodes[index].id)),
            _ => {}
        }
    }
    ids.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok((ids, plain))
}

/// Adds the files of `tree` (at `path`, its own path when `named`) to `ids` and its subtrees to
/// `subtrees`; whether its own entries are plain: each a regular file (`100644`) or a directory
/// (`40000`), named in UTF-8 as tfrs names a file (see `git::commit`'s path check), in git's
/// order (a directory's name as if it ended in `/`), as the tree tfrs makes holds them, and
/// written as tfrs writes it ([`canonical`]).
fn read_one(tree: &Tree<'_>, path: &str, named: bool, ids: &mut Ids, subtrees: &mut Subtrees) -> bool {
    let mut plain = !tree.is_empty();
    let mut last: Vec<u8> = Vec::new();
    for entry in tree {
        let name = entry.name_bytes();
        let utf8 = entry.name().is_ok();
        let is_tree = entry.kind() == Some(ObjectType::Tree);
        let key = name.iter().chain(if is_tree { &b"/"[..] } else { b"" });
        let ordered = last.is_empty() || key.clone().cmp(last.iter()).is_gt();
        plain &= utf8 && ordered && usable_name(name);
        last.clear();
        last.extend(key);
        let child = format!("{path}/{}", String::from_utf8_lossy(name));
        match entry.kind() {
            Some(ObjectType::Blob) => {
                plain &= entry.filemode_raw() == BLOB_MODE;
                ids.push((child, entry.id()));
            }
            Some(ObjectType::Tree) => {
                plain &= entry.filemode_raw() == TREE_MODE;
                subtrees.push((child, entry.id(), named && utf8));
            }
            _ => plain = false,
        }
    }
    plain && canonical(tree)
}

/// Whether `tree`'s id is that of its entries written as git (and tfrs) writes a tree: no other
/// spelling of a mode, say.
fn canonical(tree: &Tree<'_>) -> bool {
    let mut data = Vec::with_capacity(tree.len() * 64);
    for entry in tree {
        push_tree_entry(&mut data, entry.filemode_raw(), entry.name_bytes(), entry.id());
    }
    id_of(ObjectType::Tree, &data).is_ok_and(|id| id == tree.id())
}

/// The files of tree `id` at `path` (its own path when `named`) and below, read one by one,
/// into `ids`, and its plain trees with their own paths into `plain`; whether it is plain.
fn read_below(repo: &Repository, (id, path, named): (Oid, &str, bool), ids: &mut Ids, plain: &mut Ids) -> Result<bool, git2::Error> {
    let mut subtrees = Vec::new();
    let mut whole = read_one(&repo.find_tree(id)?, path, named, ids, &mut subtrees);
    for (child, tree, named) in subtrees {
        whole &= read_below(repo, (tree, &child, named), ids, plain)?;
    }
    if whole && named {
        plain.push((path.to_owned(), id));
    }
    Ok(whole)
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::FileMode;
    use git2::build::TreeUpdateBuilder;

    /// A tree of more directories than are read one by one, with what is not plain at the top,
    /// in the middle and at the bottom.
    fn tree(repo: &Repository) -> Oid {
        let blob = repo.blob(b"kind: ConfigMap\n").expect("blob");
        let empty = repo.treebuilder(None).expect("builder").write().expect("empty");
        let mut update = TreeUpdateBuilder::new();
        for a in 0..6 {
            for b in 0..6 {
                for c in 0..3 {
                    update.upsert(format!("n{a}/s{b}/c{c}/x.yaml"), blob, FileMode::Blob);
                }
                update.upsert(format!("n{a}/s{b}.yaml"), blob, FileMode::Blob);
            }
        }
        update.upsert("top.sh", blob, FileMode::BlobExecutable);
        update.upsert("n1/s2/link", blob, FileMode::Link);
        update.upsert("n3/s4/c1/empty", empty, FileMode::Tree);
        update.upsert("n5/s5/c2/module", blob, FileMode::Commit);
        let root = repo.find_tree(repo.treebuilder(None).expect("builder").write().expect("root")).expect("root");
        update.create_updated(repo, &root).expect("tree")
    }

    #[test]
    fn trees_read_side_by_side_give_what_one_reader_gives() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init_bare(dir.path()).expect("init");
        let root = tree(&repo);
        let (ids, mut plain) = read_all(&repo, root, "clusters/c").expect("read");
        let (mut one_ids, mut one_plain) = (Vec::new(), Vec::new());
        assert!(!read_below(&repo, (root, "clusters/c", true), &mut one_ids, &mut one_plain).expect("read"));
        one_ids.sort();
        plain.sort();
        one_plain.sort();
        assert_eq!(ids, one_ids);
        assert_eq!(plain, one_plain);
        assert!(ids.len() > 6 * 6 * 4, "{} files", ids.len());
        let plain: Vec<&str> = plain.iter().map(|(path, _)| path.as_str()).collect();
        for path in ["clusters/c/n0", "clusters/c/n3/s3", "clusters/c/n3/s4/c0", "clusters/c/n5/s5/c1"] {
            assert!(plain.contains(&path), "{path} is plain");
        }
        for path in ["clusters/c", "clusters/c/n1", "clusters/c/n1/s2", "clusters/c/n3/s4", "clusters/c/n3/s4/c1", "clusters/c/n5/s5/c2"] {
            assert!(!plain.contains(&path), "{path} is not plain");
        }
    }

    /// A tree object written as given: `(mode, name, id)` in this order.
    fn raw_tree(repo: &Repository, entries: &[(&str, &[u8], Oid)]) -> Oid {
        let mut data = Vec::new();
        for (mode, name, id) in entries {
            data.extend_from_slice(format!("{mode} ").as_bytes());
            data.extend_from_slice(name);
            data.push(0);
            data.extend_from_slice(id.as_bytes());
        }
        repo.odb().expect("odb").write(git2::ObjectType::Tree, &data).expect("tree")
    }

    #[test]
    fn a_tree_not_written_as_tfrs_writes_one_is_not_plain() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init_bare(dir.path()).expect("init");
        let blob = repo.blob(b"kind: ConfigMap\n").expect("blob");
        let plain = |entries: &[(&str, &[u8], Oid)]| {
            let id = raw_tree(&repo, entries);
            let (mut ids, mut plain) = (Vec::new(), Vec::new());
            read_below(&repo, (id, "clusters/c/d", true), &mut ids, &mut plain).expect("read")
        };
        assert!(plain(&[("100644", b"a.yaml", blob), ("100644", b"b.yaml", blob)]), "as git writes it");
        let sub = raw_tree(&repo, &[("100644", b"x.yaml", blob)]);
        assert!(plain(&[("100644", b"a.yaml", blob), ("40000", b"s", sub)]), "with a directory");
        for (why, entries) in [
            ("out of order", vec![("100644", &b"b.yaml"[..], blob), ("100644", b"a.yaml", blob)]),
            ("a name twice", vec![("100644", b"a.yaml", blob), ("100644", b"a.yaml", blob)]),
            ("a zero-padded mode", vec![("0100644", b"a.yaml", blob)]),
            ("a directory's zero-padded mode", vec![("040000", b"s", sub)]),
            ("a slash in a name", vec![("100644", b"s/x.yaml", blob)]),
            ("a name tfrs never writes", vec![("100644", b"..", blob)]),
            ("a name that is not UTF-8", vec![("100644", b"\xff.yaml", blob)]),
        ] {
            assert!(!plain(&entries), "{why}");
        }
    }
}
