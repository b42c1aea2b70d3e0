//! Redis Cluster's rules, as plain data: the slot of a key, the slot map a
//! node gives in answer to `CLUSTER SLOTS`, and the node a `MOVED` or `ASK`
//! names. The store (`mod.rs`) sends; nothing here touches a socket.

use std::collections::BTreeMap;

use ::redis::Value;

use super::url::Addr;

/// The slots of a cluster.
pub(super) const SLOTS: u16 = 16_384;

/// The slot of `key`: CRC16 (XMODEM) of its hash tag, the text between its
/// first `{` and the first `}` after it when that is not empty, or of the whole key.
pub(super) fn slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        rest.iter().position(|&b| b == b'}').filter(|&close| close > 0).map(|close| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) % SLOTS
}

/// CRC16-CCITT (XMODEM): polynomial 0x1021, start 0, as the cluster spec says.
fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &byte| {
        (0..8)
            .fold(crc ^ (u16::from(byte) << 8), |crc, _| if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 })
    })
}

/// Which node serves each slot, as one node said, with what `MOVED` replies taught since.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SlotMap {
    /// First slot of each range -> (last slot, its master).
    ranges: BTreeMap<u16, (u16, Addr)>,
    /// Slots a `MOVED` placed since the map was made.
    moved: BTreeMap<u16, Addr>,
    /// Every node the map names, masters first: whom to ask for a new map.
    nodes: Vec<Addr>,
}

impl SlotMap {
    /// The map in a `CLUSTER SLOTS` reply from the node at `asked`: one entry
    /// per range, `[first, last, [host, port, ...], [replica host, port, ...], ...]`.
    /// A node that names no host (an empty one, or `?`) is on `asked`'s host.
    /// `None` when the reply is not such a list.
    pub(super) fn parse(reply: &Value, asked: &Addr) -> Option<SlotMap> {
        let Value::Array(entries) = reply else { return None };
        let mut map = SlotMap::default();
        let mut replicas = Vec::new();
        for entry in entries {
            let Value::Array(fields) = entry else { return None };
            let (first, last) = (slot_number(fields.first()?)?, slot_number(fields.get(1)?)?);
            let master = node(fields.get(2)?, asked)?;
            if first > last {
                return None;
            }
            for replica in &fields[3..] {
                replicas.extend(node(replica, asked));
            }
            if !map.nodes.contains(&master) {
                map.nodes.push(master.clone());
            }
            map.ranges.insert(first, (last, master));
        }
        for replica in replicas {
            if !map.nodes.contains(&replica) {
                map.nodes.push(replica);
            }
        }
        Some(map)
    }

    /// The master of `slot`, if the map knows one.
    pub(super) fn owner(&self, slot: u16) -> Option<&Addr> {
        if let Some(addr) = self.moved.get(&slot) {
            return Some(addr);
        }
        let (_, (last, addr)) = self.ranges.range(..=slot).next_back()?;
        (slot <= *last).then_some(addr)
    }

    /// `MOVED slot addr`: the slot is served there now.
    pub(super) fn moved(&mut self, slot: u16, addr: Addr) {
        if !self.nodes.contains(&addr) {
            self.nodes.push(addr.clone());
        }
        self.moved.insert(slot, addr);
    }

    /// Every node the map names, masters first.
    pub(super) fn nodes(&self) -> &[Addr] {
        &self.nodes
    }
}

fn slot_number(value: &Value) -> Option<u16> {
    match value {
        Value::Int(n) => u16::try_from(*n).ok().filter(|n| *n < SLOTS),
        _ => None,
    }
}

/// `[host, port, id, ...]` of a `CLUSTER SLOTS` entry.
fn node(value: &Value, asked: &Addr) -> Option<Addr> {
    let Value::Array(fields) = value else { return None };
    let host = match fields.first()? {
        Value::BulkString(host) => String::from_utf8(host.clone()).ok()?,
        Value::SimpleString(host) => host.clone(),
        _ => return None,
    };
    let port = match fields.get(1)? {
        Value::Int(port) => u16::try_from(*port).ok().filter(|p| *p > 0)?,
        _ => return None,
    };
    Some(Addr::Tcp { host: known_host(&host, asked), port })
}

/// A node's host as a cluster names it; none (empty, or `?`): the host of the node that said so.
fn known_host(host: &str, asked: &Addr) -> String {
    match (host, asked) {
        ("" | "?", Addr::Tcp { host, .. }) => host.clone(),
        ("" | "?", Addr::Unix(_)) => "127.0.0.1".to_string(),
        (host, _) => host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase(),
    }
}

/// The node a `MOVED`/`ASK` reply names, `HOST:PORT` (an IPv6 host unbracketed,
/// or none: the host of the node that said so).
pub(super) fn redirected(addr: &str, asked: &Addr) -> Option<Addr> {
    let (host, port) = addr.rsplit_once(':')?;
    let port = port.parse().ok().filter(|p| *p > 0)?;
    Some(Addr::Tcp { host: known_host(host, asked), port })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Addr {
        Addr::Tcp { host: host.into(), port }
    }

    #[test]
    fn slots_are_the_crc16_of_the_hash_tag() {
        // The cluster spec's own check value, and slots as redis-server's CLUSTER KEYSLOT gives them.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        for (key, want) in [
            ("foo", 12_182),
            ("poll:{k}:rate", 7_629),
            ("k", 7_629),
            ("{user1000}.following", slot(b"user1000")),
            ("foo{}{bar}", slot(b"foo{}{bar}")),
            ("foo{{bar}}zap", slot(b"{bar")),
            ("foo{bar}{zap}", slot(b"bar")),
            ("", 0),
        ] {
            assert_eq!(slot(key.as_bytes()), want, "{key}");
        }
    }

    fn entry(first: i64, last: i64, nodes: &[(&str, i64)]) -> Value {
        let mut fields = vec![Value::Int(first), Value::Int(last)];
        for (host, port) in nodes {
            fields.push(Value::Array(vec![
                Value::BulkString(host.as_bytes().to_vec()),
                Value::Int(*port),
                Value::BulkString(b"id".to_vec()),
            ]));
        }
        Value::Array(fields)
    }

    #[test]
    fn the_slot_map_names_each_slots_master_and_every_node() {
        let asked = tcp("10.0.0.9", 7000);
        let reply = Value::Array(vec![
            entry(0, 5460, &[("127.0.0.1", 7001), ("127.0.0.1", 7004)]),
            entry(5461, 10922, &[("", 7002)]),
            entry(10923, 16383, &[("Node3.Internal", 7003), ("?", 7005)]),
        ]);
        let mut map = SlotMap::parse(&reply, &asked).expect("a map");
        assert_eq!(map.owner(0), Some(&tcp("127.0.0.1", 7001)));
        assert_eq!(map.owner(5460), Some(&tcp("127.0.0.1", 7001)));
        assert_eq!(map.owner(5461), Some(&tcp("10.0.0.9", 7002)));
        assert_eq!(map.owner(16383), Some(&tcp("node3.internal", 7003)));
        let nodes = [
            ("127.0.0.1", 7001),
            ("10.0.0.9", 7002),
            ("node3.internal", 7003),
            ("127.0.0.1", 7004),
            ("10.0.0.9", 7005),
        ];
        assert_eq!(map.nodes(), nodes.map(|(h, p)| tcp(h, p)));
        map.moved(7, tcp("127.0.0.1", 7009));
        assert_eq!(map.owner(7), Some(&tcp("127.0.0.1", 7009)));
        assert_eq!(map.owner(8), Some(&tcp("127.0.0.1", 7001)));
        assert_eq!(map.nodes().len(), 6);

        let gap = SlotMap::parse(&Value::Array(vec![entry(100, 200, &[("h", 1)])]), &asked).expect("a map");
        assert_eq!((gap.owner(99), gap.owner(201), gap.owner(150)), (None, None, Some(&tcp("h", 1))));
        assert_eq!(SlotMap::parse(&Value::Array(vec![]), &asked), Some(SlotMap::default()));
        for bad in [
            Value::Nil,
            Value::Array(vec![Value::Int(1)]),
            Value::Array(vec![entry(5, 4, &[("h", 1)])]),
            Value::Array(vec![entry(0, 16384, &[("h", 1)])]),
            Value::Array(vec![entry(0, 1, &[("h", 0)])]),
            Value::Array(vec![entry(0, 1, &[])]),
        ] {
            assert_eq!(SlotMap::parse(&bad, &asked), None, "{bad:?}");
        }
    }

    #[test]
    fn redirections_name_a_node() {
        let asked = tcp("10.0.0.9", 7000);
        assert_eq!(redirected("127.0.0.1:7002", &asked), Some(tcp("127.0.0.1", 7002)));
        assert_eq!(redirected(":7002", &asked), Some(tcp("10.0.0.9", 7002)));
        assert_eq!(redirected("::1:7002", &asked), Some(tcp("::1", 7002)));
        assert_eq!(redirected("h:0", &asked), None);
        assert_eq!(redirected("h", &asked), None);
    }
}
