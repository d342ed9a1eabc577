//! Pure ordering: the component graph, who may start next (longest remaining chain first), the
//! order of objects inside a component, and the critical-path arithmetic of the benchmark.

use super::rollout::Plan;
use std::collections::BTreeMap;
use std::time::Duration;

/// A problem with the plan's dependency graph.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// A `dependsOn` entry names no component of the plan.
    #[error("component `{component}` depends on `{dependency}`, which is not in the plan")]
    UnknownDependency {
        /// The component with the dangling edge.
        component: String,
        /// The missing dependency.
        dependency: String,
    },
    /// Two components share an id.
    #[error("component `{0}` appears twice in the plan")]
    DuplicateComponent(String),
    /// The dependencies form a cycle.
    #[error("the components form a dependency cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
}

/// The components as a graph of indices into [`Plan::components`].
#[derive(Debug, Clone)]
pub struct Graph {
    /// Component ids, by index.
    pub ids: Vec<String>,
    /// Dependencies of each component.
    pub dependencies: Vec<Vec<usize>>,
    /// Components that depend on each component.
    pub dependents: Vec<Vec<usize>>,
    /// The number of components on the longest chain that starts at each component (itself
    /// included): the scheduling priority.
    pub chain: Vec<usize>,
}

impl Graph {
    /// Builds the graph of a plan.
    ///
    /// # Errors
    ///
    /// Unknown dependencies, duplicate ids and cycles.
    pub fn new(plan: &Plan) -> Result<Self, Error> {
        let mut index = BTreeMap::new();
        for (i, component) in plan.components.iter().enumerate() {
            if index.insert(component.id.as_str(), i).is_some() {
                return Err(Error::DuplicateComponent(component.id.clone()));
            }
        }
        let count = plan.components.len();
        let mut dependencies = vec![Vec::new(); count];
        let mut dependents = vec![Vec::new(); count];
        for (i, component) in plan.components.iter().enumerate() {
            for dependency in &component.depends_on {
                let Some(&d) = index.get(dependency.as_str()) else {
                    return Err(Error::UnknownDependency { component: component.id.clone(), dependency: dependency.clone() });
                };
                if !dependencies[i].contains(&d) {
                    dependencies[i].push(d);
                    dependents[d].push(i);
                }
            }
        }
        let ids = plan.components.iter().map(|c| c.id.clone()).collect();
        let mut graph = Graph { ids, dependencies, dependents, chain: vec![0; count] };
        let order = graph.topological()?;
        for &i in order.iter().rev() {
            graph.chain[i] = 1 + graph.dependents[i].iter().map(|&d| graph.chain[d]).max().unwrap_or(0);
        }
        Ok(graph)
    }

    /// The number of components.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no components.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// A topological order (dependencies first), or the cycle found.
    pub(super) fn topological(&self) -> Result<Vec<usize>, Error> {
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut state = vec![0u8; self.len()];
        let mut order = Vec::with_capacity(self.len());
        let mut stack: Vec<usize> = Vec::new();
        fn visit(graph: &Graph, node: usize, state: &mut [u8], stack: &mut Vec<usize>, order: &mut Vec<usize>) -> Result<(), Error> {
            match state[node] {
                2 => return Ok(()),
                1 => {
                    let start = stack.iter().position(|&n| n == node).unwrap_or(0);
                    let mut cycle: Vec<String> = stack[start..].iter().map(|&n| graph.ids[n].clone()).collect();
                    cycle.push(graph.ids[node].clone());
                    return Err(Error::Cycle(cycle));
                }
                _ => {}
            }
            state[node] = 1;
            stack.push(node);
            for &dependency in &graph.dependencies[node] {
                visit(graph, dependency, state, stack, order)?;
            }
            stack.pop();
            state[node] = 2;
            order.push(node);
            Ok(())
        }
        for node in 0..self.len() {
            visit(self, node, &mut state, &mut stack, &mut order)?;
        }
        Ok(order)
    }

    /// Every component that depends on `node`, directly or not.
    #[must_use]
    pub fn downstream(&self, node: usize) -> Vec<usize> {
        let mut seen = vec![false; self.len()];
        let mut todo = vec![node];
        let mut found = Vec::new();
        while let Some(n) = todo.pop() {
            for &d in &self.dependents[n] {
                if !seen[d] {
                    seen[d] = true;
                    found.push(d);
                    todo.push(d);
                }
            }
        }
        found.sort_unstable();
        found
    }
}

/// Where a component stands in a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Waiting for dependencies.
    Waiting,
    /// Started.
    Running,
    /// Ready.
    Ready,
    /// Failed, or skipped because a dependency failed.
    Failed,
}

/// The pure scheduler: which component may start next.
///
/// # Guarantees
///
/// - A component is offered only when every dependency is [`State::Ready`].
/// - Among startable components, the one with the longest remaining chain goes first (ties:
///   more downstream components, then plan order).
#[derive(Debug, Clone)]
pub struct Schedule<'a> {
    graph: &'a Graph,
    states: Vec<State>,
    downstream: Vec<usize>,
}

impl<'a> Schedule<'a> {
    /// A schedule where nothing has started.
    #[must_use]
    pub fn new(graph: &'a Graph) -> Self {
        let downstream = (0..graph.len()).map(|i| graph.downstream(i).len()).collect();
        Schedule { graph, states: vec![State::Waiting; graph.len()], downstream }
    }

    /// The state of a component.
    #[must_use]
    pub fn state(&self, node: usize) -> State {
        self.states[node]
    }

    /// The best component to start now, marked running; `None` when none can start.
    pub fn start_next(&mut self) -> Option<usize> {
        let graph = self.graph;
        let best = (0..graph.len())
            .filter(|&i| self.states[i] == State::Waiting)
            .filter(|&i| graph.dependencies[i].iter().all(|&d| self.states[d] == State::Ready))
            .max_by_key(|&i| (graph.chain[i], self.downstream[i], std::cmp::Reverse(i)))?;
        self.states[best] = State::Running;
        Some(best)
    }

    /// Marks a running component ready.
    pub fn ready(&mut self, node: usize) {
        self.states[node] = State::Ready;
    }

    /// Marks a component failed and returns the waiting components that can now never start
    /// (also marked failed), in plan order.
    pub fn fail(&mut self, node: usize) -> Vec<usize> {
        self.states[node] = State::Failed;
        let blocked: Vec<usize> = self.graph.downstream(node).into_iter().filter(|&d| self.states[d] == State::Waiting).collect();
        for &d in &blocked {
            self.states[d] = State::Failed;
        }
        blocked
    }

    /// Whether every component is ready or failed.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.states.iter().all(|s| matches!(s, State::Ready | State::Failed))
    }
}

/// Where an object goes inside its component: CustomResourceDefinitions, then Namespaces, then
/// everything else (plan order kept within each rank).
#[must_use]
pub fn object_rank(api_version: &str, kind: &str) -> u8 {
    match (crate::object::api_group(api_version), kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => 0,
        ("", "Namespace") => 1,
        _ => 2,
    }
}

/// The critical path: the longest sum of durations along any dependency chain, i.e. the least
/// wall time any rollout of the graph can take with unbounded parallelism.
#[must_use]
pub fn critical_path(graph: &Graph, durations: &[Duration]) -> Duration {
    let mut finish = vec![Duration::ZERO; graph.len()];
    let order = graph.topological().unwrap_or_default();
    for &i in &order {
        let start = graph.dependencies[i].iter().map(|&d| finish[d]).max().unwrap_or(Duration::ZERO);
        finish[i] = start + durations[i];
    }
    finish.into_iter().max().unwrap_or(Duration::ZERO)
}

/// The wall time of a level-by-level rollout (every component of a depth starts together, the
/// next depth when the slowest is done), for comparison with [`critical_path`].
#[must_use]
pub fn level_by_level(graph: &Graph, durations: &[Duration]) -> Duration {
    let mut depth = vec![0usize; graph.len()];
    for &i in &graph.topological().unwrap_or_default() {
        depth[i] = graph.dependencies[i].iter().map(|&d| depth[d] + 1).max().unwrap_or(0);
    }
    let mut slowest: BTreeMap<usize, Duration> = BTreeMap::new();
    for (i, &d) in depth.iter().enumerate() {
        let entry = slowest.entry(d).or_default();
        *entry = (*entry).max(durations[i]);
    }
    slowest.values().sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::rollout::{Component, Plan};

    fn plan(edges: &[(&str, &[&str])]) -> Plan {
        Plan {
            cluster: "c".into(),
            components: edges
                .iter()
                .map(|(id, deps)| Component {
                    id: (*id).into(),
                    path: String::new(),
                    depends_on: deps.iter().map(|d| (*d).to_string()).collect(),
                    objects: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn longest_chain_goes_first_and_dependencies_gate() {
        // a -> b -> c (long chain) and x (alone); a and x are both startable.
        let graph = Graph::new(&plan(&[("x", &[]), ("a", &[]), ("b", &["a"]), ("c", &["b"])])).expect("graph");
        assert_eq!(graph.chain, vec![1, 3, 2, 1]);
        let mut schedule = Schedule::new(&graph);
        assert_eq!(schedule.start_next(), Some(1));
        assert_eq!(schedule.start_next(), Some(0));
        assert_eq!(schedule.start_next(), None, "b waits for a");
        schedule.ready(1);
        assert_eq!(schedule.start_next(), Some(2));
        schedule.ready(2);
        schedule.ready(0);
        assert_eq!(schedule.start_next(), Some(3));
        schedule.ready(3);
        assert!(schedule.is_done());
    }

    #[test]
    fn failure_blocks_everything_downstream_only() {
        let graph = Graph::new(&plan(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &[])])).expect("graph");
        let mut schedule = Schedule::new(&graph);
        assert_eq!(schedule.start_next(), Some(0));
        assert_eq!(schedule.fail(0), vec![1, 2]);
        assert_eq!(schedule.start_next(), Some(3));
        schedule.ready(3);
        assert!(schedule.is_done());
    }

    #[test]
    fn graph_errors() {
        assert_eq!(
            Graph::new(&plan(&[("a", &["b"])])).err(),
            Some(Error::UnknownDependency { component: "a".into(), dependency: "b".into() })
        );
        let cycle = Graph::new(&plan(&[("a", &["c"]), ("b", &["a"]), ("c", &["b"])])).expect_err("a cycle");
        assert_eq!(cycle.to_string(), "the components form a dependency cycle: a -> c -> b -> a");
        assert_eq!(Graph::new(&plan(&[("a", &[]), ("a", &[])])).err(), Some(Error::DuplicateComponent("a".into())));
    }

    #[test]
    fn objects_crds_then_namespaces_then_the_rest() {
        let mut objects = [("v1", "ConfigMap"), ("v1", "Namespace"), ("apiextensions.k8s.io/v1", "CustomResourceDefinition")];
        objects.sort_by_key(|(v, k)| object_rank(v, k));
        assert_eq!(objects.map(|o| o.1), ["CustomResourceDefinition", "Namespace", "ConfigMap"]);
    }

    #[test]
    fn critical_path_and_levels() {
        // a(1) -> b(5); c(4) -> d(1): critical path 6; levels: max(1,4) + max(5,1) = 9.
        let graph = Graph::new(&plan(&[("a", &[]), ("b", &["a"]), ("c", &[]), ("d", &["c"])])).expect("graph");
        let seconds = [1, 5, 4, 1].map(Duration::from_secs);
        assert_eq!(critical_path(&graph, &seconds), Duration::from_secs(6));
        assert_eq!(level_by_level(&graph, &seconds), Duration::from_secs(9));
    }
}
