//! The model's state: the lock item (with the replica a stale read may still answer from), the
//! writes in flight, the clients, and ghost fields the properties read (never the protocol).

/// Time in ticks: one tick is one second, the unit of `expires_at`.
pub type Tick = i64;

/// A client (model checking: a few; trace validation: one per owner token seen on a key).
pub type ClientId = u16;

/// The number of an acquisition (model checking) or of an acquire attempt (trace validation).
pub type Nth = u16;

/// A fencing token (`ddblock_fence`; in trace validation the real one, from a clock in µs).
pub type Fence = i64;

/// The owner of an item a keep-fence release left: `value` and `ddblock_attempt` removed.
pub const NOBODY: ClientId = ClientId::MAX;

/// The lock item as DynamoDB stores it (docs/format.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Item {
    /// `value`: the owner, one per client (a lock handle reused for each acquisition).
    pub owner: ClientId,
    /// Ghost: which acquisition of `owner` wrote the item (ddblock stores it as `ddblock_attempt`).
    pub n: Nth,
    /// `ddblock_attempt` present (ddblock's write); Laravel's `add()` rewrites the item without it.
    pub has_attempt: bool,
    /// `expires_at`, by the writer's clock.
    pub expires_at: Tick,
    /// `ddblock_fence`; Laravel's `add()` drops it.
    pub fence: Option<Fence>,
    /// `ddblock_since`: when the writing acquisition began waiting (its clock), if it waited.
    pub since: Option<Tick>,
}

/// An acquire write in flight: ddblock's UpdateItem or Laravel's `add()` PutItem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Write {
    pub client: ClientId,
    /// The acquisition (ddblock: the attempt id is `(client, n)`).
    pub n: Nth,
    /// Which write of the attempt (1, 2, ...).
    pub seq: u8,
    /// The sender's clock at the send: `:now` of the condition.
    pub now: Tick,
    /// True time of the send (the holder's lease is measured from it, by its monotonic clock).
    pub sent_at: Tick,
    pub expires_at: Tick,
    /// `:fence_base`: the sender's clock in "µs" at the send.
    pub fence_base: Fence,
    /// `:since`, set by an acquisition that waits (the fairness stamp).
    pub since: Option<Tick>,
}

/// What an acquire write's answer says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// The condition held; the fence the item now carries.
    Written { fence: Option<Fence>, sent_at: Tick },
    /// The condition failed; the item that is there (`ALL_OLD`).
    Taken(Item),
    /// The condition failed, and the item was gone when the client looked: a server that ignores
    /// `ALL_OLD` (dynalite) is answered by a consistent read after the refusal, which may find
    /// the item changed since (trace validation only: the configurations' table sends `ALL_OLD`).
    Gone,
}

/// How a client's last acquisition ended (ghost, for the properties).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ended {
    /// A release ran (whatever it found).
    Released,
    /// The acquire failed with an unknown outcome (after ddblock's clean-up; Laravel has none).
    Unknown,
    /// The acquire was told the lock is held.
    Held,
    /// The holder handed its owner over to another process (`restore_lock`) and stopped using
    /// the lock.
    HandedOver,
}

/// Where a client is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not in an acquisition.
    Idle,
    /// Acquiring: `writes` sent so far; `unknown` once an answer was lost; `waiting` for the
    /// answer to that write (`None`: done sending, to finish); `answer` once it came.
    Acquiring {
        writes: u8,
        unknown: bool,
        waiting: Option<u8>,
        answer: Option<Answer>,
    },
    /// Holding, as the client believes until `deadline` (true time, by its monotonic clock).
    Holding {
        deadline: Tick,
        fence: Option<Fence>,
    },
    /// Laravel's release after its read saw the lock as ours: the unconditional delete is next.
    Deleting,
    /// ddblock's release applied but its answer was lost: the same request is sent again.
    Releasing,
}

/// One client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    /// Its clock minus true time.
    pub offset: Tick,
    /// Acquisitions started (the current one is `n - 1`).
    pub n: Nth,
    pub phase: Phase,
    /// How the last acquisition ended.
    pub ended: Option<Ended>,
}

impl Client {
    /// The current acquisition's number.
    pub fn current(&self) -> Nth {
        self.n.saturating_sub(1)
    }

    /// Whether it holds the lock by its own clock at true time `t`.
    pub fn live(&self, t: Tick) -> bool {
        matches!(self.phase, Phase::Holding { deadline, .. } if t < deadline)
    }
}

/// Events seen on the way (sticky bits), for the `sometimes` properties.
pub mod event {
    pub const ACQUIRED: u16 = 1;
    pub const RECOVERED: u16 = 1 << 1;
    pub const CLEANED_UP: u16 = 1 << 2;
    pub const TAKEN_OVER: u16 = 1 << 3;
    pub const REFRESHED: u16 = 1 << 4;
    pub const TTL_DELETED: u16 = 1 << 5;
    pub const STALE_READ: u16 = 1 << 6;
    pub const RELEASED: u16 = 1 << 7;
    pub const RESENT_NOT_HELD: u16 = 1 << 8;
    pub const RESTORED_RELEASED: u16 = 1 << 9;
    pub const RESTORED_REFRESHED: u16 = 1 << 10;
    pub const STAMP_READ: u16 = 1 << 11;
    pub const STAMP_LEFT: u16 = 1 << 12;
    pub const STAMPED_ACQUIRED: u16 = 1 << 13;
}

/// The whole state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// True time (DynamoDB's clock).
    pub t: Tick,
    pub item: Option<Item>,
    /// `Some(v)`: an eventually consistent read may still answer `v`, the version before the last
    /// change (cleared once the staleness window has passed).
    pub stale: Option<Option<Item>>,
    /// When the item last changed.
    pub changed_at: Tick,
    /// Writes in flight, sorted.
    pub net: Vec<Write>,
    pub clients: Vec<Client>,
    /// Acquire writes sent so far: the sub-tick part of a send's clock, so later sends read later
    /// "µs" within one tick.
    pub sends: u8,
    /// Ghost: the highest fence an acquisition has written.
    pub max_fence: Option<Fence>,
    /// Ghost: an acquisition wrote a fence not above one written before.
    pub fence_back: bool,
    /// Ghost: a release deleted an item of another owner or acquisition.
    pub release_deleted_other: bool,
    /// Ghost: a clean-up deleted an item not written by its attempt.
    pub cleanup_deleted_other: bool,
    /// Ghost: a ddblock holder's live lock was removed by someone else (stock Laravel's delete,
    /// a force release), not by its own release, its expiry or TTL.
    pub ddblock_lock_taken: bool,
    /// Ghost: a resent release changed an item (its first request had already applied).
    pub resend_changed: bool,
    /// Ghost: the one force release of the run was made.
    pub forced: bool,
    /// Per client, when its current wait began (its clock), while it waits: its writes stamp
    /// it (`ddblock_since`).
    pub since: Vec<Option<Tick>>,
    /// Ghost: `event` bits seen.
    pub seen: u16,
}

impl State {
    /// The state before anything happened: time 0, no item, nothing in flight, these clients.
    pub fn new(clients: Vec<Client>) -> State {
        State {
            t: 0,
            item: None,
            stale: None,
            changed_at: 0,
            net: Vec::new(),
            clients,
            sends: 0,
            max_fence: None,
            fence_back: false,
            release_deleted_other: false,
            cleanup_deleted_other: false,
            ddblock_lock_taken: false,
            resend_changed: false,
            forced: false,
            since: Vec::new(),
            seen: 0,
        }
    }
}

/// One step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// True time advances one tick (every client's clock with it).
    Tick,
    /// A client starts an acquisition and sends its first write.
    Acquire(ClientId),
    /// A write in flight reaches the table: `(client, seq)`.
    Land(ClientId, u8),
    /// A write in flight is lost on the way and never lands.
    Drop(ClientId, u8),
    /// A write is refused before it lands (`ReplicatedWriteConflictException`, throttling), and
    /// the client is told so: it sends the same write again.
    Refuse(ClientId, u8),
    /// A client reads the answer it waits for.
    Answer(ClientId),
    /// A client stops waiting: the answer is lost or late (a timeout).
    Timeout(ClientId),
    /// An acquire with a deadline sends its attempt's next write.
    Resend(ClientId),
    /// A client ends its acquire once done sending (ddblock: the clean-up when unknown).
    Finish(ClientId),
    /// A holder's heartbeat refreshes the lock; `true`: its answer is lost.
    Refresh(ClientId, bool),
    /// A holder releases (ddblock: one conditional request, `true` if its answer is lost after it
    /// applied, or the resend of that request; Laravel: the read, `true` if stale).
    Release(ClientId, bool),
    /// Laravel's release deletes after its read saw its owner.
    Delete(ClientId),
    /// DynamoDB TTL deletes the expired item.
    TtlDelete,
    /// An operator's `force_release` (delete mode): one unconditional DeleteItem, whoever holds.
    ForceRelease,
}

/// A step's human-readable lines, collected only when printing a trace.
pub struct Notes(pub Option<Vec<String>>);

impl Notes {
    /// Adds a line (built only when collecting).
    pub fn say(&mut self, line: impl FnOnce() -> String) {
        if let Some(lines) = &mut self.0 {
            lines.push(line());
        }
    }
}

/// Shows an item in a trace line.
pub fn show_item(item: Option<Item>, names: &[String]) -> String {
    match item {
        None => "none".into(),
        Some(i) => {
            let fence = i.fence.map_or(String::from("none"), |f| f.to_string());
            if i.owner == NOBODY {
                return format!(
                    "owner=none (kept) expires_at={} fence={fence}",
                    i.expires_at
                );
            }
            let name = names.get(usize::from(i.owner)).map_or("?", String::as_str);
            let since = i.since.map_or(String::new(), |t| format!(" since={t}"));
            format!(
                "owner={name}#{} expires_at={} fence={fence}{since}",
                i.n + 1,
                i.expires_at
            )
        }
    }
}
