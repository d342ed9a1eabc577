//! The commit's trees, built in memory: the rendered cluster directories over the branch's
//! tree, with only the directories above a change made again.

use crate::git::extend_ids;
use crate::git::file_ids;
use crate::git::pack::{BLOB_MODE, Object, TREE_MODE, push_tree_entry, usable_name};
use crate::layout::cluster_dirs;
use crate::tree::{Files, Kept};
use git2::{ObjectType, Oid, Repository, Tree};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The blob ids of the files below some cluster directories of one Git tree.
#[derive(Debug, Clone)]
pub struct KnownIds {
    /// The tree they were read from.
    pub tree: Oid,
    /// The cluster directories read (`clusters/<name>`), sorted.
    pub dirs: Vec<String>,
    /// Every file's blob id, by path.
    pub ids: BTreeMap<String, Oid>,
    /// The tree id of each plain directory below them (see [`super::file_ids`]), by path: a
    /// commit takes such a tree as it is when none of its files changed.
    pub trees: HashMap<String, Oid>,
}

impl KnownIds {
    /// The ids of the files of `dirs` (cluster directories, sorted) in `tree`.
    ///
    /// # Errors
    ///
    /// A tree below them cannot be read.
    pub fn read(repo: &Repository, tree: &Tree<'_>, dirs: Vec<String>) -> Result<KnownIds, git2::Error> {
        KnownIds::read_cached(repo, tree, dirs, &|_, _| None)
    }

    /// [`KnownIds::read`], taking a cluster directory's ids from `cached` (given the directory
    /// and the id of its tree in `tree`) when it has them for that same tree: a tree's id is that
    /// of everything below it, so they are the ids a read would give.
    ///
    /// # Errors
    ///
    /// A tree below them cannot be read.
    pub fn read_cached(
        repo: &Repository,
        tree: &Tree<'_>,
        dirs: Vec<String>,
        cached: &dyn Fn(&str, Oid) -> Option<ClusterIds>,
    ) -> Result<KnownIds, git2::Error> {
        let mut known = KnownIds { tree: tree.id(), dirs, ids: BTreeMap::new(), trees: HashMap::new() };
        for dir in &known.dirs {
            let entry = tree.get_path(std::path::Path::new(dir)).ok().filter(|entry| entry.kind() == Some(ObjectType::Tree));
            let held = entry.and_then(|entry| cached(dir, entry.id()).filter(|ids| ids.tree == entry.id() && ids.dir == *dir));
            let Some(ClusterIds { files, trees, .. }) = held else {
                file_ids(repo, tree, dir, &mut known.ids, Some(&mut known.trees))?;
                continue;
            };
            extend_ids(&mut known.ids, files);
            known.trees.extend(trees);
        }
        Ok(known)
    }
}

/// The first line of [`ClusterIds::write_to`]'s text.
const IDS_HEADER: &str = "tfrs tree ids v1";

impl ClusterIds {
    /// Writes the ids as text: a header line with the tree's id and the directory, a line per
    /// file (`f <blob id> <path>`) and per plain directory (`t <tree id> <path>`), and a last
    /// line with how many of each (`end <files> <trees>`: a file cut short is no ids at all).
    /// Nothing is written (and `Ok(false)` returned) when a path holds a line break or a
    /// carriage return.
    ///
    /// # Errors
    ///
    /// `out`'s.
    pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<bool> {
        let paths = std::iter::once(&self.dir).chain(self.files.iter().chain(&self.trees).map(|(path, _)| path));
        if paths.into_iter().any(|path| path.contains(['\n', '\r'])) {
            return Ok(false);
        }
        writeln!(out, "{IDS_HEADER} {} {}", self.tree, self.dir)?;
        for (kind, entries) in [('f', &self.files), ('t', &self.trees)] {
            for (path, id) in entries {
                writeln!(out, "{kind} {id} {path}")?;
            }
        }
        writeln!(out, "end {} {}", self.files.len(), self.trees.len())?;
        Ok(true)
    }

    /// The tree a text of [`ClusterIds::write_to`] is of, read from its first line only.
    #[must_use]
    pub fn tree_of(text: &str) -> Option<Oid> {
        ClusterIds::header(text).map(|(tree, ..)| tree)
    }

    /// The tree and directory the header of a text of [`ClusterIds::write_to`] names, and the
    /// lines after it.
    fn header(text: &str) -> Option<(Oid, &str, &str)> {
        let (header, rest) = text.split_once('\n')?;
        let (tree, dir) = header.strip_prefix(IDS_HEADER)?.strip_prefix(' ')?.split_once(' ')?;
        Some((Oid::from_str(tree).ok()?, dir, rest))
    }

    /// Reads [`ClusterIds::write_to`]'s text back; `None` for anything else.
    #[must_use]
    pub fn parse(text: &str) -> Option<ClusterIds> {
        let (tree, dir, rest) = ClusterIds::header(text)?;
        let rest = rest.strip_suffix('\n')?;
        let (rest, end) = rest.rsplit_once('\n').unwrap_or(("", rest));
        let (files, trees) = end.strip_prefix("end ")?.split_once(' ')?;
        let counts: (usize, usize) = (files.parse().ok()?, trees.parse().ok()?);
        let pieces: Vec<Option<Vec<(char, String, Oid)>>> = crate::tree::current::line_pieces(rest, 1 << 18)
            .into_par_iter()
            .map(|piece| piece.lines().map(parse_id_line).collect())
            .collect();
        let mut ids = ClusterIds { dir: dir.to_owned(), tree, files: Vec::new(), trees: Vec::new() };
        for (kind, path, id) in pieces.into_iter().collect::<Option<Vec<_>>>()?.into_iter().flatten() {
            match kind {
                'f' => ids.files.push((path, id)),
                _ => ids.trees.push((path, id)),
            }
        }
        (counts == (ids.files.len(), ids.trees.len()) && ids.files.is_sorted_by(|a, b| a.0 < b.0)).then_some(ids)
    }
}

/// One line of [`ClusterIds::write_to`]'s text.
fn parse_id_line(line: &str) -> Option<(char, String, Oid)> {
    let (kind, rest) = line.split_once(' ')?;
    let (id, path) = rest.split_once(' ')?;
    let kind = match kind {
        "f" => 'f',
        "t" => 't',
        _ => return None,
    };
    Some((kind, path.to_owned(), Oid::from_str(id).ok().filter(|_| id.len() == 40)?))
}

/// The memo checks its stamps against the branch's files by these ids (a blob id is the file's
/// content id), so they are read once, for both.
impl crate::render::memo::Contents for KnownIds {
    fn content_id(&self, path: &str) -> Option<crate::object::ContentId> {
        self.ids.get(path).and_then(|oid| crate::git::pack::content_id(*oid))
    }
}

/// A tree entry: name, mode, id.
pub(super) type TreeEntry<'a> = (Cow<'a, [u8]>, i32, Oid);

/// The tree object holding `entries`, sorted as git sorts them (a tree's name as if it ended
/// in `/`).
pub(super) fn tree_object(mut entries: Vec<TreeEntry<'_>>) -> Result<Object<'static>, git2::Error> {
    let key = |(name, mode, _): &TreeEntry<'_>| {
        let slash: &[u8] = if *mode == TREE_MODE { b"/" } else { b"" };
        name.iter().chain(slash).copied().collect::<Vec<u8>>()
    };
    entries.sort_by_cached_key(key);
    let mut data = Vec::with_capacity(entries.iter().map(|(name, _, _)| name.len() + 28).sum());
    for (name, mode, id) in &entries {
        push_tree_entry(&mut data, *mode, name, *id);
    }
    Object::new(ObjectType::Tree, Cow::Owned(data))
}

/// Whether `path` (relative, `/`-separated) can be a file's path in git.
pub(super) fn check_path(path: &str) -> Result<(), git2::Error> {
    match path.split('/').find(|name| !usable_name(name.as_bytes())) {
        Some(name) => Err(git2::Error::from_str(&format!("`{path}`: `{name}` cannot be a file or directory name in git"))),
        None => Ok(()),
    }
}

/// A directory of the rendered tree: its entries by name.
#[derive(Default)]
pub(super) struct Dir<'a> {
    entries: BTreeMap<&'a str, Node<'a>>,
}

pub(super) enum Node<'a> {
    Blob(Oid),
    /// A directory taken whole from the base.
    Tree(Oid),
    Dir(Dir<'a>),
}

impl<'a> Dir<'a> {
    /// Adds `leaf` (a blob or a tree) at `path` (relative, `/`-separated, checked).
    fn insert(&mut self, path: &'a str, leaf: Node<'a>) -> Result<(), git2::Error> {
        let (name, rest) = path.split_once('/').map_or((path, None), |(name, rest)| (name, Some(rest)));
        let conflict = || git2::Error::from_str(&format!("`{name}` is both a file and a directory"));
        match rest {
            // NB: each path comes once, so a name already there is a file and a directory (a
            // reused directory comes after the file of its name).
            None => match self.entries.insert(name, leaf) {
                Some(_) => Err(conflict()),
                None => Ok(()),
            },
            Some(rest) => match self.entries.entry(name).or_insert_with(|| Node::Dir(Dir::default())) {
                Node::Dir(dir) => dir.insert(rest, leaf),
                Node::Blob(_) | Node::Tree(_) => Err(conflict()),
            },
        }
    }

    /// Pushes the tree objects of this directory (at `path`) and below onto `objects`, and
    /// each one's path and id onto `made`; returns its id.
    fn write(self, path: &str, objects: &mut Vec<Object<'_>>, made: &mut Vec<(String, Oid)>) -> Result<Oid, git2::Error> {
        let mut entries = Vec::with_capacity(self.entries.len());
        for (name, node) in self.entries {
            let (mode, id) = match node {
                Node::Blob(id) => (BLOB_MODE, id),
                Node::Tree(id) => (TREE_MODE, id),
                Node::Dir(dir) => (TREE_MODE, dir.write(&format!("{path}/{name}"), objects, made)?),
            };
            entries.push((Cow::Borrowed(name.as_bytes()), mode, id));
        }
        let tree = tree_object(entries)?;
        let id = tree.id;
        objects.push(tree);
        made.push((path.to_owned(), id));
        Ok(id)
    }
}

/// The id of `tree`, or of the empty tree (which need not be in the repository).
pub(super) fn tree_id(tree: Option<&Tree<'_>>) -> Result<Oid, git2::Error> {
    tree.map_or_else(|| Ok(tree_object(Vec::new())?.id), |tree| Ok(tree.id()))
}

/// A new tree built in memory, nothing written yet.
pub(super) struct Built<'a> {
    /// The root tree.
    pub(super) root: Oid,
    /// Every blob and tree of the rendered directories and the trees above them (the
    /// repository may hold some already; duplicates are possible).
    pub(super) objects: Vec<Object<'a>>,
    /// The paths under the cluster directories whose file differs from the base's: added,
    /// removed or changed.
    pub(super) differ: Vec<String>,
    /// The ids of each cluster directory of the new tree.
    pub(super) clusters: Vec<ClusterIds>,
}

/// The ids of one cluster directory of a tree: its own tree's, its files' (sorted by path) and
/// its plain directories' (see [`KnownIds::trees`]). A commit keeps them for the next one, which
/// takes them instead of reading the branch's trees when the directory's tree is the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIds {
    /// `clusters/<name>`.
    pub dir: String,
    /// Its tree.
    pub tree: Oid,
    /// Each file's blob, by path, sorted.
    pub files: Vec<(String, Oid)>,
    /// Each plain directory's tree, by path.
    pub trees: Vec<(String, Oid)>,
}

/// The directories (`dir` and below) in which a file of `new` (sorted by path, all below
/// `dir`) and `old` differs: added, removed or with another blob. The paths that differ are
/// added to `differ`.
pub(super) fn changed_dirs<'p>(
    dir: &str,
    new: &[(&'p str, Oid)],
    old: &'p BTreeMap<String, Oid>,
    differ: &mut Vec<String>,
) -> HashSet<&'p str> {
    let prefix = format!("{dir}/");
    let old = old.range(prefix.clone()..).take_while(|(path, _)| path.starts_with(&prefix)).map(|(p, id)| (p.as_str(), *id));
    let mut changed = HashSet::new();
    for (path, (now, was)) in crate::tree::current::merge_by_path(new.iter().copied(), old) {
        if now == was {
            continue;
        }
        differ.push(path.to_owned());
        // NB: a directory already in the set has its parents there too.
        let mut at = path;
        while let Some((parent, _)) = at.rsplit_once('/') {
            if parent.len() < dir.len() || !changed.insert(parent) {
                break;
            }
            at = parent;
        }
    }
    changed
}

/// The directory tree of cluster directory `dir` holding `new` (its files' blob ids, sorted by
/// path): a directory none of whose files differs from `old` is taken whole when the base's is
/// plain, so only the directories above a change are made. The paths that differ are added to
/// `differ`.
pub(super) fn cluster_tree<'a>(
    dir: &str,
    new: &[(&'a str, Oid)],
    old: &KnownIds,
    differ: &mut Vec<String>,
) -> Result<(Dir<'a>, Vec<(String, Oid)>), git2::Error> {
    let changed = changed_dirs(dir, new, &old.ids, differ);
    // NB: a plain directory of the base none of whose files changed is in the new tree as it is
    // (taken whole, or below one taken whole).
    let prefix = format!("{dir}/");
    let same: Vec<(String, Oid)> = old
        .trees
        .iter()
        .filter(|(path, _)| path.starts_with(&prefix) && !changed.contains(path.as_str()))
        .map(|(path, id)| (path.clone(), *id))
        .collect();
    // The outermost directory of `path` taken whole: where it ends in `path`, and its tree.
    let taken = |path: &str| -> Option<(usize, Oid)> {
        let mut at = dir.len();
        while let Some(slash) = path[at + 1..].find('/') {
            at += 1 + slash;
            let parent = &path[..at];
            if let (false, Some(id)) = (changed.contains(parent), old.trees.get(parent)) {
                return Some((at, *id));
            }
        }
        None
    };
    let mut tree = Dir::default();
    let mut last: Option<&str> = None;
    let mut checked_dir: Option<&str> = None;
    for &(path, id) in new {
        let relative = &path[dir.len() + 1..];
        // NB: every path is checked, those of a directory taken whole too; a directory's names
        // once for all its files (they come in order), the file's own name each time.
        let (parent, name) = relative.rsplit_once('/').unwrap_or(("", relative));
        if checked_dir != Some(parent) || !usable_name(name.as_bytes()) {
            check_path(relative)?;
        }
        checked_dir = Some(parent);
        if last.is_some_and(|taken| path.strip_prefix(taken).is_some_and(|rest| rest.starts_with('/'))) {
            continue;
        }
        match taken(path) {
            Some((at, id)) => {
                tree.insert(&path[dir.len() + 1..at], Node::Tree(id))?;
                last = Some(&path[..at]);
            }
            None => tree.insert(relative, Node::Blob(id))?,
        }
    }
    Ok((tree, same))
}

/// Files' blob ids, by path.
type FileIds<'a> = Vec<(&'a str, Oid)>;

/// The files of cluster directory `dir`: the blobs of the rendered ones, and every file's blob
/// id (the rendered ones' and the `kept` ones'), sorted by path.
fn cluster_files<'a>(dir: &str, files: &'a Files, kept: &'a Kept) -> Result<(Vec<Object<'a>>, FileIds<'a>), git2::Error> {
    let prefix = format!("{dir}/");
    let inside: Vec<(&'a str, &'a str, &'a [u8])> = files
        .range(prefix.clone()..)
        .map_while(|(path, bytes)| path.strip_prefix(&prefix).map(|relative| (path.as_str(), relative, bytes.as_slice())))
        .collect();
    let blobs: Vec<Object<'a>> =
        inside.par_iter().map(|&(_, _, bytes)| Object::new(ObjectType::Blob, Cow::Borrowed(bytes))).collect::<Result<_, _>>()?;
    let mut new: Vec<(&'a str, Oid)> = inside.iter().zip(&blobs).map(|(&(path, ..), blob)| (path, blob.id)).collect();
    for (path, id) in kept.range(prefix.clone()..).take_while(|(path, _)| path.starts_with(&prefix)) {
        new.push((path.as_str(), Oid::from_bytes(&id.0)?));
    }
    // NB: two sorted runs; of a path in both, the kept one stays.
    new.sort_by(|a, b| a.0.cmp(b.0));
    new.dedup_by(|later, earlier| {
        later.0 == earlier.0 && {
            *earlier = *later;
            true
        }
    });
    Ok((blobs, new))
}

/// Replaces `clusters/<cluster>/` of `base` with the rendered files, in memory: the blob ids
/// are computed in parallel, the trees above them from those. The `kept` files (the render
/// memo's, known by content id) are already in the repository: only their ids are entered. A
/// directory none of whose files differs from `old` (the ids of `base`'s files) is `base`'s
/// tree, when that is plain: only the trees above a change are made.
pub(super) fn build_tree<'a>(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    files: &'a Files,
    kept: &'a Kept,
    old: &KnownIds,
) -> Result<Built<'a>, git2::Error> {
    let dirs = cluster_dirs(files);
    let mut built = Built { root: tree_id(base)?, objects: Vec::new(), differ: Vec::new(), clusters: Vec::new() };
    if dirs.is_empty() {
        return Ok(built);
    }
    let mut clusters: Vec<TreeEntry<'_>> = Vec::new();
    for dir in &dirs {
        let (blobs, new) = cluster_files(dir, files, kept)?;
        let (tree, mut trees) = cluster_tree(dir, &new, old, &mut built.differ)?;
        let id = tree.write(dir, &mut built.objects, &mut trees)?;
        let name = dir.strip_prefix("clusters/").unwrap_or(dir).as_bytes().to_vec();
        clusters.push((Cow::Owned(name), TREE_MODE, id));
        built.objects.extend(blobs);
        let files = new.into_iter().map(|(path, id)| (path.to_owned(), id)).collect();
        built.clusters.push(ClusterIds { dir: dir.clone(), tree: id, files, trees });
    }
    // `clusters/` keeps its other clusters, the root its other entries.
    let kept = |tree: Option<&Tree<'_>>, replaced: &[TreeEntry<'_>]| -> Vec<TreeEntry<'static>> {
        tree.into_iter()
            .flat_map(Tree::iter)
            .filter(|entry| !replaced.iter().any(|(name, _, _)| name[..] == *entry.name_bytes()))
            .map(|entry| (Cow::Owned(entry.name_bytes().to_vec()), entry.filemode_raw(), entry.id()))
            .collect()
    };
    let old_clusters = match base.and_then(|tree| tree.get_name("clusters")) {
        Some(entry) if entry.kind() == Some(ObjectType::Tree) => Some(repo.find_tree(entry.id())?),
        _ => None,
    };
    let mut entries = kept(old_clusters.as_ref(), &clusters);
    entries.extend(clusters);
    let clusters_tree = tree_object(entries)?;
    let clusters_entry: TreeEntry<'_> = (Cow::Borrowed(b"clusters"), TREE_MODE, clusters_tree.id);
    built.objects.push(clusters_tree);
    let mut entries = kept(base, std::slice::from_ref(&clusters_entry));
    entries.push(clusters_entry);
    let root = tree_object(entries)?;
    built.root = root.id;
    built.objects.push(root);
    Ok(built)
}

/// The files of `base` (under the cluster directories that `files` fill) and of `files` that
/// differ, by blob id; only the old blobs that differ are read, so a small change stays small.
/// [`diff::changes`] of these equals that of the whole trees.
pub(super) fn changed_files(
    repo: &Repository,
    files: &Files,
    kept: &Kept,
    differ: &[String],
    old_ids: &BTreeMap<String, Oid>,
) -> Result<(Files, Files), git2::Error> {
    let mut old = Files::new();
    let outside = files.iter().filter(|(path, _)| crate::layout::cluster_of(path).is_none());
    let mut new: Files = outside.map(|(path, bytes)| (path.clone(), bytes.clone())).collect();
    for path in differ {
        if let Some(id) = old_ids.get(path) {
            old.insert(path.clone(), repo.find_blob(*id)?.content().to_vec());
        }
        // NB: of a path both rendered and kept, the tree holds the kept file.
        if let Some(id) = kept.get(path) {
            // A kept file differs from the base only when the branch moved since the memo was
            // checked.
            new.insert(path.clone(), repo.find_blob(Oid::from_bytes(&id.0)?)?.content().to_vec());
        } else if let Some(bytes) = files.get(path) {
            new.insert(path.clone(), bytes.clone());
        }
    }
    Ok((old, new))
}

/// The ids of the files of `dirs` in `base`: `known` when it was read from that same tree and
/// directories, read now otherwise (none without a base).
pub(super) fn base_ids<'k>(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    mut dirs: Vec<String>,
    known: Option<&'k KnownIds>,
) -> Result<Cow<'k, KnownIds>, git2::Error> {
    dirs.sort();
    match (base, known) {
        (Some(base), Some(known)) if base.id() == known.tree && known.dirs == dirs => Ok(Cow::Borrowed(known)),
        (Some(base), _) => KnownIds::read(repo, base, dirs).map(Cow::Owned),
        (None, _) => Ok(Cow::Owned(KnownIds { tree: Oid::ZERO_SHA1, dirs, ids: BTreeMap::new(), trees: HashMap::new() })),
    }
}
