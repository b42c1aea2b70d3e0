//! Where each step on the Redis store goes, and what it follows on the way:
//! the one server a URL names, the master of a step's slot on a Redis
//! Cluster (learnt with `CLUSTER SLOTS`, kept up by `MOVED` and `ASK`, asked
//! again of the other nodes when a master is lost), or the master the
//! Sentinels name (asked again after a failover). A step that meets
//! `TRYAGAIN` and its kin waits and tries again within its time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ::redis::{ErrorKind, RedisError, ServerErrorKind, Value};

use super::Call;
use super::cluster::{self, SlotMap};
use super::node::{Dialer, Node};
use super::sentinel::{self, Sentinels, Unknown};
use super::url::{Addr, Servers};
use crate::util::text::{human, printable};

/// The most servers one step is sent to (redirections, a new master) between
/// two pauses: a cluster whose nodes send each other's clients back and forth is broken.
const MAX_HOPS: usize = 8;
/// A `TRYAGAIN` (a slot being migrated) or `CLUSTERDOWN` is tried again
/// after this pause, doubled each time up to [`PAUSE_MAX`], within the step's time.
const PAUSE_START: Duration = Duration::from_millis(5);
const PAUSE_MAX: Duration = Duration::from_millis(100);
/// While the store is left alone after its master failed, the Sentinels (or
/// the cluster's other nodes) are asked at most this often whether another
/// has taken over.
const ASK_EVERY: Duration = Duration::from_millis(250);

/// The servers of a store and the connections to them, each made on demand.
pub(super) struct Router {
    dialer: Dialer,
    place: Place,
    nodes: BTreeMap<Addr, Node>,
    early: Early,
}

/// Where the data is.
enum Place {
    /// The server the URL names, and what it turned out to be.
    Seed { seed: Addr, topology: Topology },
    /// The master the Sentinels name.
    Sentinel { sentinels: Sentinels, master: Option<Addr> },
}

/// What the server a URL names is.
#[derive(Debug, PartialEq, Eq)]
enum Topology {
    /// Not asked yet: the first step asks.
    Unknown,
    /// A single server.
    Single,
    /// A node of a cluster, and the cluster's slot map.
    Cluster(SlotMap),
}

/// While the store is left alone after the master of a slot failed.
#[derive(Debug, Default)]
struct Early {
    /// The master that failed, and the slot of the step (0 off a cluster).
    failed: Option<(Addr, u16)>,
    /// When the Sentinels were last asked whether another has taken over.
    asked: Option<Instant>,
    /// The Sentinels did not answer either: not asked again before the back-off ends.
    quiet: bool,
}

/// Why a step failed.
#[derive(Debug)]
pub(super) enum StepFailure {
    Redis(RedisError),
    Sentinel(Unknown),
}

impl From<RedisError> for StepFailure {
    fn from(e: RedisError) -> StepFailure {
        StepFailure::Redis(e)
    }
}

impl Router {
    /// The servers a URL names (not connected yet), reached by `dialer`.
    pub(super) fn new(servers: &Servers, dialer: Dialer) -> Router {
        let place = match servers {
            Servers::Node(seed) => Place::Seed { seed: seed.clone(), topology: Topology::Unknown },
            Servers::Sentinel { sentinels, master } => {
                Place::Sentinel { sentinels: Sentinels::new(sentinels, master), master: None }
            }
        };
        Router { dialer, place, nodes: BTreeMap::new(), early: Early::default() }
    }

    /// Whether a connection to any server is open.
    #[cfg(test)]
    pub(super) fn any_open(&self) -> bool {
        self.nodes.values().any(Node::is_open)
    }

    /// Sends `call` to the server that holds its slot, following the cluster
    /// and the Sentinels until it is answered, fails, or `deadline` passes.
    /// A connection that was made in an earlier step and found closed (a
    /// server restart, Redis's `timeout`) is made again once.
    pub(super) fn run(&mut self, deadline: Instant, call: &Call) -> Result<Value, StepFailure> {
        self.early = Early::default();
        self.discover(deadline)?;
        let mut asking = None;
        let mut pause = PAUSE_START;
        let mut made_again = Vec::new();
        // Redirections since the last pause: nodes that keep sending a step to each other are broken.
        let mut hops = 0;
        loop {
            let (addr, ask) = match asking.take() {
                Some(addr) => (addr, true),
                None => (self.target(deadline, call.slot)?, false),
            };
            let reused = self.nodes.get(&addr).is_some_and(Node::is_open);
            let e = match self.attempt(&addr, deadline, call, ask) {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            if Instant::now() >= deadline || e.is_timeout() || hops >= MAX_HOPS {
                self.failed(&addr, call.slot);
                return Err(e.into());
            }
            hops += 1;
            match e.kind() {
                ErrorKind::Server(ServerErrorKind::Moved) => {
                    match e.redirect_node().and_then(|(to, slot)| Some((cluster::redirected(to, &addr)?, slot))) {
                        Some((to, slot)) => self.moved(slot, to),
                        None => return Err(e.into()),
                    }
                }
                ErrorKind::Server(ServerErrorKind::Ask) => {
                    match e.redirect_node().and_then(|(to, _)| cluster::redirected(to, &addr)) {
                        Some(to) => asking = Some(to),
                        None => return Err(e.into()),
                    }
                }
                ErrorKind::Server(
                    ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::BusyLoading
                    | ServerErrorKind::MasterDown,
                ) => {
                    std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
                    pause = (pause * 2).min(PAUSE_MAX);
                    hops = 0;
                }
                ErrorKind::Server(ServerErrorKind::ReadOnly) => {
                    if let Some(node) = self.nodes.get_mut(&addr) {
                        node.close();
                    }
                    if !self.lost(&addr, deadline, call.slot) {
                        return Err(e.into());
                    }
                }
                _ if e.is_io_error() => {
                    if reused && !made_again.contains(&addr) {
                        made_again.push(addr);
                    } else if !self.lost(&addr, deadline, call.slot) {
                        self.failed(&addr, call.slot);
                        return Err(e.into());
                    }
                }
                _ => return Err(e.into()),
            }
        }
    }

    /// The server at `addr`, made (not connected) if it is new.
    fn node(&mut self, addr: &Addr) -> Result<&mut Node, RedisError> {
        if !self.nodes.contains_key(addr) {
            let node = self.dialer.node(addr);
            self.nodes.insert(addr.clone(), node);
        }
        self.nodes.get_mut(addr).ok_or_else(|| RedisError::from((ErrorKind::Client, "no such server")))
    }

    /// Runs `call` on `addr`; a master a Sentinel named is asked first, on
    /// a new connection, whether it is one (it may still be a replica).
    fn attempt(&mut self, addr: &Addr, deadline: Instant, call: &Call, asking: bool) -> Result<Value, RedisError> {
        let check_role = matches!(self.place, Place::Sentinel { .. });
        let node = self.node(addr)?;
        if check_role && !node.is_open() {
            let role = node.request(deadline, &::redis::cmd("ROLE"));
            if let Err(e) = &role
                && !matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
            {
                return role;
            }
            if !sentinel::is_master(&role) {
                node.close();
                return Err(RedisError::from((
                    ErrorKind::Server(ServerErrorKind::ReadOnly),
                    "the master the Sentinels named is a replica",
                )));
            }
        }
        node.eval(deadline, call.script, &call.cmd, asking)
    }

    /// At the first step on a URL's server: whether it is a cluster node (and its slot map).
    fn discover(&mut self, deadline: Instant) -> Result<(), StepFailure> {
        let Place::Seed { seed, topology: Topology::Unknown } = &self.place else { return Ok(()) };
        let seed = seed.clone();
        let reply = self.ask_slots(&seed, deadline);
        let topology = match reply {
            Ok(map) => map.map_or(Topology::Single, Topology::Cluster),
            // Not a cluster node ("cluster support disabled"), or one that will not say (ACLs): one server.
            Err(e) if matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension) => Topology::Single,
            Err(e) => return Err(e.into()),
        };
        if let Place::Seed { topology: now, .. } = &mut self.place {
            *now = topology;
        }
        Ok(())
    }

    /// `CLUSTER SLOTS` of the server at `addr`.
    fn ask_slots(&mut self, addr: &Addr, deadline: Instant) -> Result<Option<SlotMap>, RedisError> {
        let reply = self.node(addr)?.request(deadline, ::redis::cmd("CLUSTER").arg("SLOTS"))?;
        Ok(SlotMap::parse(&reply, addr))
    }

    /// Where the next try of a step on `slot` goes.
    fn target(&mut self, deadline: Instant, slot: u16) -> Result<Addr, StepFailure> {
        match &mut self.place {
            Place::Seed { seed, topology: Topology::Cluster(map) } => Ok(map.owner(slot).unwrap_or(seed).clone()),
            Place::Seed { seed, .. } => Ok(seed.clone()),
            Place::Sentinel { master: Some(master), .. } => Ok(master.clone()),
            Place::Sentinel { sentinels, master } => match sentinels.master(deadline) {
                Ok(addr) => Ok(master.insert(addr).clone()),
                Err(unknown) => {
                    self.early.quiet = true;
                    Err(StepFailure::Sentinel(unknown))
                }
            },
        }
    }

    /// A `MOVED`: the slot is on `to` now (and a server that said so is a cluster node).
    fn moved(&mut self, slot: u16, to: Addr) {
        if let Place::Seed { topology, .. } = &mut self.place {
            if !matches!(topology, Topology::Cluster(_)) {
                *topology = Topology::Cluster(SlotMap::default());
            }
            if let Topology::Cluster(map) = topology {
                map.moved(slot, to);
            }
        }
    }

    /// The server at `addr` failed (it cannot be reached, or is no longer a
    /// master): whether another now holds `slot`, asking the cluster's other
    /// nodes for their slot map, or the Sentinels for the master.
    fn lost(&mut self, addr: &Addr, deadline: Instant, slot: u16) -> bool {
        match &mut self.place {
            Place::Seed { topology: Topology::Cluster(map), seed } => {
                let mut others: Vec<Addr> = map.nodes().iter().filter(|node| *node != addr).cloned().collect();
                if seed != addr && !others.contains(seed) {
                    others.push(seed.clone());
                }
                for other in others {
                    if Instant::now() >= deadline {
                        break;
                    }
                    if let Ok(Some(new)) = self.ask_slots(&other, deadline) {
                        let moved = new.owner(slot).is_some_and(|owner| owner != addr);
                        if let Place::Seed { topology, .. } = &mut self.place {
                            *topology = Topology::Cluster(new);
                        }
                        return moved;
                    }
                }
                self.early.quiet = true;
                false
            }
            Place::Seed { .. } => false,
            Place::Sentinel { sentinels, master } => {
                *master = None;
                match sentinels.master(deadline) {
                    Ok(new) if &new != addr => {
                        *master = Some(new);
                        true
                    }
                    Ok(same) => {
                        *master = Some(same);
                        false
                    }
                    Err(_) => {
                        self.early.quiet = true;
                        false
                    }
                }
            }
        }
    }

    /// A step on `slot` failed on `addr`: the server to look past while the store is left alone.
    fn failed(&mut self, addr: &Addr, slot: u16) {
        self.early.failed = Some((addr.clone(), slot));
    }

    /// A failed step in words: Redis's error, or what the Sentinels said.
    pub(super) fn describe(&self, e: &StepFailure, timeout: Duration) -> String {
        let redis = |e: &RedisError| {
            if e.is_timeout() {
                format!("Redis did not answer within {}", human(timeout))
            } else if e.kind() == ErrorKind::AuthenticationFailed {
                "Redis refused the user name or password of the URL".to_string()
            } else if e.code() == Some("NOAUTH")
                || ["unauthenticated", "Authentication required"].iter().any(|w| e.to_string().contains(w))
            {
                // Redis 7 answers a long command of a client that has not logged in with a protocol error.
                "Redis wants a password: redis://:PASS@HOST or redis://USER:PASS@HOST".to_string()
            } else if e.is_io_error() || e.is_connection_refusal() {
                format!("cannot reach Redis: {e}")
            } else {
                format!("Redis failed: {e}")
            }
        };
        match (e, &self.place) {
            (StepFailure::Redis(e), _) => redis(e),
            (StepFailure::Sentinel(Unknown::NoMaster), Place::Sentinel { sentinels, .. }) => {
                format!("the Sentinels know no master named `{}`", printable(sentinels.master_name()))
            }
            (StepFailure::Sentinel(Unknown::Unreachable(e)), _) => {
                format!("no Sentinel answered: {}", redis(e))
            }
            (StepFailure::Sentinel(Unknown::NoMaster), _) => "the Sentinels know no such master".to_string(),
        }
    }

    /// While the store is left alone after the master of its slot failed:
    /// whether another has taken over, as the Sentinels or the cluster's
    /// other nodes say (asked at most every [`ASK_EVERY`], and not again once
    /// none of them answered). A single node has no one to ask.
    pub(super) fn worth_a_try(&mut self, timeout: Duration) -> bool {
        let Some((failed, slot)) = self.early.failed.clone() else { return false };
        let clustered = matches!(self.place, Place::Seed { topology: Topology::Cluster(_), .. });
        let sentinel = matches!(self.place, Place::Sentinel { .. });
        if !(clustered || sentinel) || self.early.quiet || self.early.asked.is_some_and(|at| at.elapsed() < ASK_EVERY) {
            return false;
        }
        let now = Instant::now();
        self.early.asked = Some(now);
        self.lost(&failed, now + timeout, slot)
    }
}
