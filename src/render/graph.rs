//! The component dependency graph (cluster, tenant and server components and what each waits
//! for), as data.
//!
//! Cycles are impossible by construction: [`Graph::add`] only accepts dependencies on
//! components already added, so insertion order is a topological order.

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// A dependency graph of component ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    order: Vec<String>,
    // NB: hashed, not ordered (`order` is the order): a large platform has tens of thousands
    // of ids that share long prefixes, and every one is looked up several times.
    nodes: HashMap<String, Node>,
}

/// One component of a [`Graph`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Node {
    /// Its direct dependencies, sorted.
    depends_on: Vec<String>,
    /// 0 without dependencies, else 1 + the deepest dependency's.
    depth: usize,
}

/// One member of a group for [`Graph::add_group`].
#[derive(Debug, Clone)]
pub struct Member {
    /// Its name within the group.
    pub name: &'static str,
    /// Group members it waits for.
    pub after: &'static [&'static str],
    /// Ids outside the group it waits for, when they are in the graph.
    pub external: Vec<String>,
    /// Whether the spec turns it on.
    pub enabled: bool,
}

/// A dependency named before its component was added (a bug in a component table).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("component `{component}` depends on `{dependency}`, which is not defined before it")]
pub struct UnknownDependency {
    /// The component being added.
    pub component: String,
    /// The dependency it named.
    pub dependency: String,
}

impl Graph {
    /// Adds a component after its dependencies.
    ///
    /// # Errors
    ///
    /// A dependency that is not in the graph yet, or a component added twice.
    pub fn add(&mut self, id: &str, depends_on: Vec<String>) -> Result<(), UnknownDependency> {
        if self.nodes.contains_key(id) {
            return Err(UnknownDependency { component: id.to_owned(), dependency: id.to_owned() });
        }
        let mut depth = 0;
        for dependency in &depends_on {
            let Some(node) = self.nodes.get(dependency) else {
                return Err(UnknownDependency { component: id.to_owned(), dependency: dependency.clone() });
            };
            depth = depth.max(node.depth + 1);
        }
        let mut depends_on = depends_on;
        depends_on.sort();
        depends_on.dedup();
        self.order.push(id.to_owned());
        self.nodes.insert(id.to_owned(), Node { depends_on, depth });
        Ok(())
    }

    /// Adds a group of components listed dependencies-first (a cluster's, one namespace's, one
    /// server's). Each member waits for the group members it names in `after` and for the
    /// outside ids in `external` that are in the graph; a disabled member is left out and passes
    /// its own dependencies on to whoever waits for it.
    pub fn add_group(&mut self, members: impl IntoIterator<Item = Member>, id: impl Fn(&str) -> String) {
        let mut resolved: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        for member in members {
            let mut depends_on: Vec<String> = member.after.iter().flat_map(|a| resolved.get(a).cloned().unwrap_or_default()).collect();
            depends_on.extend(member.external.into_iter().filter(|e| self.contains(e)));
            depends_on.sort();
            depends_on.dedup();
            if member.enabled {
                let full = id(member.name);
                // NB: members come dependencies first and ids are distinct, so `add` succeeds;
                // the component tables' tests check the order.
                if self.add(&full, depends_on).is_ok() {
                    resolved.insert(member.name, vec![full]);
                }
            } else {
                resolved.insert(member.name, depends_on);
            }
        }
    }

    /// Component ids in a topological order (dependencies first).
    #[must_use]
    pub fn order(&self) -> &[String] {
        &self.order
    }

    /// Whether `id` is in the graph.
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.nodes.contains_key(id)
    }

    /// Direct dependencies of `id`.
    #[must_use]
    pub fn dependencies(&self, id: &str) -> &[String] {
        self.nodes.get(id).map_or(&[], |node| node.depends_on.as_slice())
    }

    /// Depth of `id`: 0 without dependencies (or not in the graph), else 1 + the deepest
    /// dependency's.
    #[must_use]
    pub fn depth(&self, id: &str) -> usize {
        self.nodes.get(id).map_or(0, |node| node.depth)
    }

    /// Whether the graph has a cycle. Always false for a graph built with [`Graph::add`]; kept
    /// as an independent check for tests.
    #[must_use]
    pub fn has_cycle(&self) -> bool {
        // Kahn's algorithm over the edges, independent of insertion order.
        let mut remaining: BTreeMap<&str, usize> = self.nodes.iter().map(|(k, v)| (k.as_str(), v.depends_on.len())).collect();
        let mut ready: Vec<&str> = remaining.iter().filter(|(_, n)| **n == 0).map(|(k, _)| *k).collect();
        let mut done = 0;
        while let Some(id) = ready.pop() {
            done += 1;
            for (other, node) in &self.nodes {
                if node.depends_on.iter().any(|d| d == id)
                    && let Some(count) = remaining.get_mut(other.as_str())
                {
                    *count -= 1;
                    if *count == 0 {
                        ready.push(other);
                    }
                }
            }
        }
        done != self.nodes.len()
    }

    /// The graph as a mermaid `graph TD`.
    #[must_use]
    pub fn mermaid(&self) -> String {
        let mut out = String::from("graph TD\n");
        for id in &self.order {
            out.push_str(&format!("  {}[\"{id}\"]\n", mermaid_id(id)));
        }
        for id in &self.order {
            for dependency in self.dependencies(id) {
                out.push_str(&format!("  {} --> {}\n", mermaid_id(dependency), mermaid_id(id)));
            }
        }
        out
    }

    /// The graph in Graphviz dot.
    #[must_use]
    pub fn dot(&self) -> String {
        let mut out = String::from("digraph tfrs {\n  rankdir=TB;\n  node [shape=box];\n");
        for id in &self.order {
            out.push_str(&format!("  \"{id}\";\n"));
        }
        for id in &self.order {
            for dependency in self.dependencies(id) {
                out.push_str(&format!("  \"{dependency}\" -> \"{id}\";\n"));
            }
        }
        out.push_str("}\n");
        out
    }
}

fn mermaid_id(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_unknown_and_forward_dependencies() {
        let mut graph = Graph::default();
        graph.add("a", vec![]).unwrap();
        assert!(graph.add("b", vec!["c".into()]).is_err());
        assert!(graph.add("a", vec![]).is_err());
        graph.add("b", vec!["a".into()]).unwrap();
        assert!(!graph.has_cycle());
        assert_eq!((graph.depth("a"), graph.depth("b")), (0, 1));
    }

    #[test]
    fn cycle_check_detects_a_hand_made_cycle() {
        let mut graph = Graph::default();
        graph.add("a", vec![]).unwrap();
        graph.add("b", vec!["a".into()]).unwrap();
        // NB: only possible by editing the map directly, which is what this check guards.
        graph.nodes.insert("a".into(), Node { depends_on: vec!["b".into()], depth: 0 });
        assert!(graph.has_cycle());
    }
}
