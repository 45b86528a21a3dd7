//! The model's parameters and the named configurations, each with the verdict expected of every
//! property.

use crate::state::{ClientId, Fence, Nth, Tick};

/// What runs a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// ddblock's core (Rust, Python, Node, the CLI).
    Core,
    /// The PHP driver: the same protocol (kept identical by the conformance vectors).
    Php,
    /// Stock Laravel: `add()`, and a release that reads before it deletes.
    Laravel,
    /// ddblock's `restore_lock` in another process on client `.0`'s owner: it never acquires, it
    /// refreshes and releases with that owner's condition, once it was handed the owner.
    Restorer(ClientId),
}

/// How a ddblock release ends the lock (`DDBLOCK_RELEASE_MODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseMode {
    /// One DeleteItem conditioned on the owner (the default).
    Delete,
    /// One UpdateItem conditioned on the owner: `expires_at` = release time minus a day, the
    /// fence kept.
    KeepFence,
}

/// A day in ticks, far beyond any horizon.
pub const DAY: Tick = 100;
/// "µs" per tick in a fence base: above the number of sends a run can make, so a later send in the
/// same tick reads a later clock.
pub const FENCE_SCALE: Fence = 16;

/// What a property is expected to show in a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Holds in every state explored (`always`), or an example is found (`sometimes`).
    Holds,
    /// A counterexample must be found (`always` properties only).
    Fails,
    /// Reported, not judged.
    Info,
}

/// One configuration of the model.
#[derive(Clone, Debug)]
pub struct Config {
    /// Short name: `a-delete`, ...
    pub name: &'static str,
    /// What it shows.
    pub title: &'static str,
    pub clients: Vec<Kind>,
    /// Per client, the clock offsets (its clock minus true time) to explore.
    pub offsets: Vec<Vec<Tick>>,
    /// Lock ttl in ticks.
    pub ttl: Tick,
    /// The clock-skew margin in ticks.
    pub margin: Tick,
    /// Time stops at this tick (clients may still act).
    pub horizon: Tick,
    /// Acquisitions per client.
    pub acquisitions: Nth,
    /// Writes per acquire attempt (the first and its resends).
    pub max_writes: u8,
    pub release: ReleaseMode,
    /// Answers may be lost (a timeout while the write landed or is still on its way).
    pub lost_answers: bool,
    /// Writes may stay in the network and land later (or never).
    pub delayed_writes: bool,
    /// A write may land after its sender ended the attempt (past the clean-up). The stated
    /// assumption is that it does not.
    pub late_writes: bool,
    /// Eventually consistent reads may answer the previous version for this many ticks after a
    /// change (`None`: reads are consistent).
    pub stale_ticks: Option<Tick>,
    /// DynamoDB TTL may delete an expired item at any time.
    pub ttl_deletion: bool,
    /// In keep-fence mode, the clean-up of an unknown outcome expires this attempt's write as
    /// the release does, keeping the fence (proposed); `false`: it deletes it (the core today).
    pub cleanup_keeps_fence: bool,
    /// A day in ticks: a keep-fence release writes `expires_at` = its clock minus a day.
    pub day: Tick,
    /// A write may be refused before it lands, the client told so (`ReplicatedWriteConflictException`
    /// on a multi-Region strongly consistent table, throttling).
    pub refused_writes: bool,
    /// A ddblock release's answer may be lost after it applied: the client sends the same
    /// request again, whose answer it goes by.
    pub lost_release_answers: bool,
    /// A holder hands its owner over to its restorer (`Kind::Restorer`) and stops using the lock
    /// as the restorer first acts. `false`: a restorer may act at any time once the first process
    /// acquired the lock, the first one still believing it holds.
    pub handover: bool,
    /// Per client, the first acquisition that waits (`block`, `acquire_within`): from it on its
    /// writes carry the fairness stamp `ddblock_since` (when the wait began), kept while it is
    /// told held and tries again. Empty: nobody waits.
    pub waits_from: Vec<Nth>,
    /// An operator may `force_release` the lock once, at any time.
    pub force_release: bool,
    /// Acquires have a deadline (`block`, `acquire_by`): after a lost answer, or an answer that
    /// does not end the attempt, the client may send again or stop sending (to finish), each a
    /// step; without, it sends again at once while `max_writes` allows.
    pub deadlines: bool,
    /// Holders refresh (the heartbeat).
    pub refresh: bool,
    /// Fences are computed (they decide nothing in the protocol, only the fence property reads
    /// them, so a configuration that does not judge it leaves them out: fewer states).
    pub fences: bool,
    /// The expected verdict per property name; a property not listed is `Info`.
    pub expect: Vec<(&'static str, Expect)>,
}

impl Config {
    /// Client `c`'s display name: its kind and its number from 1 (`core-1`, `laravel-2`).
    pub fn client_name(&self, c: ClientId) -> String {
        let kind = match self.clients[usize::from(c)] {
            Kind::Core => "core",
            Kind::Php => "php",
            Kind::Laravel => "laravel",
            Kind::Restorer(_) => "restorer",
        };
        format!("{kind}-{}", c + 1)
    }

    /// Every client's display name, by client.
    pub fn names(&self) -> Vec<String> {
        let clients = ClientId::try_from(self.clients.len()).expect("few clients");
        (0..clients).map(|c| self.client_name(c)).collect()
    }

    /// The owner (`value`) client `c` writes and conditions on: its own, or, for a restorer, the
    /// owner it restored.
    pub fn owner(&self, c: ClientId) -> ClientId {
        match self.clients.get(usize::from(c)) {
            Some(Kind::Restorer(of)) => *of,
            _ => c,
        }
    }

    /// What is expected of the property `name`.
    pub fn expectation(&self, name: &str) -> Expect {
        self.expect
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(Expect::Info, |(_, e)| *e)
    }
}

/// Property names (shared by the model, the configurations and the docs).
pub mod prop {
    pub const ONE_HOLDER: &str = "at most one live holder";
    pub const RELEASE_LEAVES_NONE: &str = "no lock left behind by a release";
    pub const UNKNOWN_LEAVES_NONE: &str = "no lock left behind by an unknown outcome";
    pub const CLEANUP_OWN_ONLY: &str = "a clean-up never deletes another holder's lock";
    pub const RELEASE_OWN_ONLY: &str = "a release never deletes another holder's lock";
    pub const FENCE_FORWARD: &str = "fences never go back";
    pub const DDBLOCK_RELEASE_LEAVES_NONE: &str = "no lock left behind by a ddblock release";
    pub const DDBLOCK_LOCK_KEPT: &str =
        "a ddblock holder's live lock is removed only by its holder (or expiry)";
    pub const EX_ACQUIRED: &str = "sometimes: a lock is acquired";
    pub const EX_RECOVERED: &str = "sometimes: a lost answer is recovered";
    pub const EX_CLEANED_UP: &str = "sometimes: an unknown outcome is cleaned up";
    pub const EX_TAKEN_OVER: &str = "sometimes: an expired lock is taken over";
    pub const EX_REFRESHED: &str = "sometimes: a lease is refreshed";
    pub const EX_TTL_DELETED: &str = "sometimes: TTL deletes an expired item";
    pub const EX_STALE_READ: &str = "sometimes: a read is stale";
    pub const EX_RELEASED: &str = "sometimes: a release ends a lock";
    pub const RESENT_RELEASE_CHANGES_NOTHING: &str = "a resent release changes no item";
    pub const EX_RESTORED_RELEASED: &str = "sometimes: a restored handle releases the lock";
    pub const EX_RESTORED_REFRESHED: &str = "sometimes: a restored handle refreshes the lock";
    pub const EX_STAMP_READ: &str = "sometimes: a waiter is refused by a stamped item";
    pub const EX_STAMP_LEFT: &str =
        "sometimes: an acquire without a wait takes over a stamped item, the stamp left";
    pub const EX_STAMPED_ACQUIRED: &str = "sometimes: a stamped write takes the lock";
    pub const EX_RESENT_NOT_HELD: &str =
        "sometimes: a resent release answers not held while another holds";
}

use Expect::{Fails, Holds};

fn base(name: &'static str, title: &'static str) -> Config {
    Config {
        name,
        title,
        clients: vec![Kind::Core, Kind::Php],
        offsets: vec![vec![0, 1], vec![0, 1]],
        ttl: 2,
        margin: 0,
        horizon: 4,
        acquisitions: 1,
        max_writes: 2,
        release: ReleaseMode::Delete,
        lost_answers: true,
        delayed_writes: true,
        late_writes: false,
        // ddblock's acquire and release read nothing eventually consistent: nothing for a stale
        // read to reach. A waiter's looks are eventually consistent, but only time its next
        // write, which the model's clients may send at any step anyway.
        stale_ticks: None,
        ttl_deletion: false,
        cleanup_keeps_fence: true,
        day: DAY,
        refused_writes: false,
        lost_release_answers: false,
        handover: false,
        waits_from: Vec::new(),
        force_release: false,
        deadlines: false,
        refresh: true,
        fences: false,
        expect: Vec::new(),
    }
}

/// The configuration trace validation replays a chaos run in (`compat-tests/chaos`, `trace`):
/// time in seconds, the run's ttl and margin, a client per owner token (added as they appear),
/// no bound on acquisitions or writes, acquires with a deadline, every fault, TTL deletion.
pub fn trace(ttl: Tick, margin: Tick, release: ReleaseMode) -> Config {
    Config {
        clients: Vec::new(),
        offsets: Vec::new(),
        ttl,
        margin,
        horizon: Tick::MAX,
        acquisitions: Nth::MAX,
        max_writes: u8::MAX,
        release,
        day: 86_400,
        // DynamoDB Local runs TTL on the run's table (dynalite does not).
        ttl_deletion: true,
        deadlines: true,
        fences: true,
        ..base("trace", "a chaos run's trace, replayed")
    }
}

/// Two stock Laravel clients, clocks in sync, no heartbeat (Laravel has none).
fn laravel(name: &'static str, title: &'static str) -> Config {
    Config {
        clients: vec![Kind::Laravel, Kind::Laravel],
        offsets: vec![vec![0], vec![0]],
        refresh: false,
        ..base(name, title)
    }
}

/// ddblock in keep-fence mode, two acquisitions each, time up to t=3, no heartbeat, writes that
/// land when sent (fewer states for the second acquisitions).
fn keep_fence(name: &'static str, title: &'static str) -> Config {
    Config {
        release: ReleaseMode::KeepFence,
        acquisitions: 2,
        horizon: 3,
        refresh: false,
        delayed_writes: false,
        ..base(name, title)
    }
}

/// The ddblock safety properties every ddblock configuration expects to hold, and `more`
/// properties expected to hold (or to find examples) there.
fn ddblock_holds(more: &[&'static str]) -> Vec<(&'static str, Expect)> {
    let safety = [
        prop::ONE_HOLDER,
        prop::RELEASE_LEAVES_NONE,
        prop::UNKNOWN_LEAVES_NONE,
        prop::CLEANUP_OWN_ONLY,
        prop::RELEASE_OWN_ONLY,
        prop::DDBLOCK_RELEASE_LEAVES_NONE,
        prop::DDBLOCK_LOCK_KEPT,
    ];
    safety.iter().chain(more).map(|&p| (p, Holds)).collect()
}

/// Every configuration, in the order the binary runs them.
pub fn configurations() -> Vec<Config> {
    let mut a = base(
        "a-delete",
        "ddblock (core and PHP driver) in delete mode; lost answers, delayed writes, pauses, \
         heartbeat, clocks within margin + 1 (its acquire and release read nothing eventually \
         consistent; a waiter's looks only time its next write): every safety property holds",
    );
    a.expect = ddblock_holds(&[
        prop::EX_ACQUIRED,
        prop::EX_RECOVERED,
        prop::EX_CLEANED_UP,
        prop::EX_TAKEN_OVER,
        prop::EX_REFRESHED,
        prop::EX_RELEASED,
    ]);

    let mut b = keep_fence(
        "b-keep-fence",
        "ddblock in keep-fence mode (the clean-up of an unknown outcome keeping the fence too), lost \
         answers (writes land when sent), clocks within margin + 1, two acquisitions each: \
         fences never go back",
    );
    b.expect = ddblock_holds(&[
        prop::FENCE_FORWARD,
        prop::EX_ACQUIRED,
        prop::EX_TAKEN_OVER,
        prop::EX_RELEASED,
    ]);

    let mut b1 = b.clone();
    b1.name = "b-keep-fence-cleanup-deletes";
    b1.title = "keep-fence mode whose clean-up of an unknown outcome deletes the item (the core \
                before the model found it): the fence goes back";
    b1.cleanup_keeps_fence = false;
    b1.expect = vec![(prop::FENCE_FORWARD, Fails)];

    let mut b2 = keep_fence(
        "b-keep-fence-ttl-in-sync",
        "keep-fence mode with DynamoDB TTL deleting the kept item at any time, clocks in sync, \
         writes not delayed: fences still go forward",
    );
    b2.ttl_deletion = true;
    b2.offsets = vec![vec![0], vec![0]];
    b2.expect = ddblock_holds(&[prop::FENCE_FORWARD, prop::EX_TTL_DELETED]);

    let mut c = laravel(
        "c-laravel-stale",
        "stock Laravel clients, eventually consistent reads: a release leaves the lock stuck",
    );
    c.stale_ticks = Some(0);
    c.lost_answers = false;
    c.delayed_writes = false;
    c.expect = vec![
        (prop::RELEASE_LEAVES_NONE, Fails),
        (prop::EX_STALE_READ, Holds),
    ];

    let mut c2 = laravel(
        "c-laravel-faults",
        "stock Laravel clients with lost answers, delayed writes and pauses (reads consistent): \
         an add() whose answer is lost leaves the lock behind, and a release paused between its \
         read and its delete deletes the next holder's lock",
    );
    c2.expect = vec![
        (prop::UNKNOWN_LEAVES_NONE, Fails),
        (prop::RELEASE_OWN_ONLY, Fails),
    ];

    let mut d = base(
        "d-skew-beyond-margin",
        "ddblock with one clock 2 ticks ahead and margin 0 (beyond margin + 1): two live holders",
    );
    d.offsets = vec![vec![0], vec![2]];
    d.expect = vec![(prop::ONE_HOLDER, Fails)];

    let mut e = base(
        "e-delete-clock-behind",
        "ddblock in delete mode, the second acquirer's clock 1 tick behind: the fence goes back",
    );
    e.offsets = vec![vec![1], vec![0]];
    e.expect = vec![(prop::FENCE_FORWARD, Fails)];

    let mut f = base(
        "f-keep-fence-ttl-clock-behind",
        "keep-fence mode, TTL deletes the kept item at once, the next acquirer's clock 1 tick \
         behind: the fence goes back (TTL deletion brings back delete mode's bound)",
    );
    f.release = ReleaseMode::KeepFence;
    f.ttl_deletion = true;
    f.offsets = vec![vec![1], vec![0]];
    f.expect = vec![(prop::FENCE_FORWARD, Fails)];

    let mut g = base(
        "g-late-write",
        "ddblock, a write that lands after its attempt ended (past the clean-up): a lock is \
         left behind, which is why the assumption is stated",
    );
    g.late_writes = true;
    g.offsets = vec![vec![0], vec![0]];
    g.expect = vec![(prop::UNKNOWN_LEAVES_NONE, Fails)];

    let mut h = base(
        "h-mixed-laravel-stale",
        "ddblock (core) and stock Laravel on one key, eventually consistent reads (the \
         migration): ddblock's own releases leave nothing and there is one live holder, but \
         Laravel's release is stuck after a stale read, and, paused between its read and its \
         delete, deletes a ddblock holder's live lock",
    );
    h.clients = vec![Kind::Core, Kind::Laravel];
    h.offsets = vec![vec![0], vec![0]];
    h.stale_ticks = Some(0);
    h.lost_answers = false;
    h.delayed_writes = false;
    h.expect = vec![
        (prop::ONE_HOLDER, Holds),
        (prop::DDBLOCK_RELEASE_LEAVES_NONE, Holds),
        (prop::CLEANUP_OWN_ONLY, Holds),
        (prop::RELEASE_LEAVES_NONE, Fails),
        (prop::RELEASE_OWN_ONLY, Fails),
        (prop::DDBLOCK_LOCK_KEPT, Fails),
        (prop::EX_STALE_READ, Holds),
        (prop::EX_TAKEN_OVER, Holds),
    ];

    let mut i = base(
        "i-force-release",
        "ddblock (core and PHP driver) with one operator's force_release at any time: it removes \
         a live holder's lock, which the holder is not told of, and another acquires it",
    );
    i.force_release = true;
    i.offsets = vec![vec![0], vec![0]];
    i.expect = vec![
        (prop::RELEASE_LEAVES_NONE, Holds),
        (prop::UNKNOWN_LEAVES_NONE, Holds),
        (prop::CLEANUP_OWN_ONLY, Holds),
        (prop::RELEASE_OWN_ONLY, Holds),
        (prop::DDBLOCK_RELEASE_LEAVES_NONE, Holds),
        (prop::ONE_HOLDER, Fails),
        (prop::DDBLOCK_LOCK_KEPT, Fails),
    ];

    let mut j = base(
        "j-replicated-write-conflict",
        "ddblock on a table that may refuse a write before it lands \
         (ReplicatedWriteConflictException on a multi-Region strongly consistent table), \
         resent as the same write, with lost answers, delayed writes and pauses: every safety \
         property holds",
    );
    j.refused_writes = true;
    j.offsets = vec![vec![0, 1], vec![0]];
    j.expect = ddblock_holds(&[prop::EX_ACQUIRED, prop::EX_RECOVERED, prop::EX_CLEANED_UP]);

    let mut k = base(
        "k-refresh-racing-expiry",
        "ddblock whose heartbeat refreshes up to the lease's last tick while a contender one tick \
         ahead waits for the expiry, over a longer horizon: the refresh never extends a lock \
         another took, and every safety property holds",
    );
    k.offsets = vec![vec![0], vec![1]];
    k.horizon = 5;
    k.expect = ddblock_holds(&[prop::EX_REFRESHED, prop::EX_TAKEN_OVER]);

    let mut a3 = base(
        "a3-delete-three-clients",
        "three ddblock clients (core, PHP driver, core) in delete mode, lost answers (writes land \
         when sent), pauses, heartbeat, the third client's clock +1: every safety property holds",
    );
    a3.clients = vec![Kind::Core, Kind::Php, Kind::Core];
    a3.offsets = vec![vec![0], vec![0], vec![1]];
    // Delayed writes too: more than 4 minutes in debug, beyond CI's step.
    a3.delayed_writes = false;
    a3.expect = ddblock_holds(&[
        prop::EX_ACQUIRED,
        prop::EX_RECOVERED,
        prop::EX_CLEANED_UP,
        prop::EX_TAKEN_OVER,
        prop::EX_RELEASED,
    ]);

    let mut b3 = keep_fence(
        "b-keep-fence-lost-release-answer",
        "keep-fence mode, the release's answer lost after it applied and the release resent \
         (conformance vector keep-fence-lost-answer), lost acquire answers, clocks each 0 or +1 for \
         one client: the resend changes nothing (another's lock included) and the client ends not \
         holding",
    );
    b3.lost_release_answers = true;
    b3.offsets = vec![vec![0, 1], vec![0]];
    b3.expect = ddblock_holds(&[
        prop::RESENT_RELEASE_CHANGES_NOTHING,
        prop::EX_RESENT_NOT_HELD,
        prop::EX_TAKEN_OVER,
        prop::EX_RELEASED,
    ]);

    let mut l = base(
        "l-restore-lock",
        "ddblock: a second process restores the first one's owner (restore_lock) and refreshes or \
         releases with it at any time, a third contends; lost answers (writes land when sent), \
         heartbeat, clocks in sync: nothing of another owner is removed and a release by either \
         handle leaves nothing, but the first process, not told of the restorer's release, \
         still believes it holds while the contender takes the lock",
    );
    l.clients = vec![Kind::Core, Kind::Restorer(0), Kind::Php];
    l.offsets = vec![vec![0], vec![0], vec![0]];
    l.delayed_writes = false;
    l.expect = vec![
        (prop::RELEASE_LEAVES_NONE, Holds),
        (prop::UNKNOWN_LEAVES_NONE, Holds),
        (prop::CLEANUP_OWN_ONLY, Holds),
        (prop::RELEASE_OWN_ONLY, Holds),
        (prop::DDBLOCK_RELEASE_LEAVES_NONE, Holds),
        (prop::DDBLOCK_LOCK_KEPT, Holds),
        (prop::ONE_HOLDER, Fails),
        (prop::EX_RESTORED_RELEASED, Holds),
        (prop::EX_RESTORED_REFRESHED, Holds),
    ];

    let mut l2 = l.clone();
    l2.name = "l-restore-lock-handed-over";
    l2.title = "restore_lock after the first process handed its owner over and stopped using the \
                lock: one live holder (both handles one owner), the restorer's refresh keeps the \
                contender out, its release ends the lock for both, nothing of another owner \
                removed: every safety property holds";
    l2.handover = true;
    l2.expect = ddblock_holds(&[
        prop::EX_RESTORED_RELEASED,
        prop::EX_RESTORED_REFRESHED,
        prop::EX_TAKEN_OVER,
    ]);

    let mut m = base(
        "m-fair-wait-stamps",
        "ddblock waiters whose writes carry the fairness stamp (ddblock_since), kept over their \
         attempts while told held, read by the other, which tries again at any time or never \
         (any timing a stamp may choose); the PHP driver's first acquisition does not wait (an \
         unstamped takeover leaves a stamp behind); lost answers (writes land when sent), no \
         heartbeat, one clock 0 or +1, two acquisitions each: the stamp decides nothing, every \
         safety property holds",
    );
    m.waits_from = vec![0, 1];
    m.refresh = false;
    m.acquisitions = 2;
    m.horizon = 3;
    m.delayed_writes = false;
    m.offsets = vec![vec![0, 1], vec![0]];
    m.expect = ddblock_holds(&[
        prop::EX_STAMP_READ,
        prop::EX_STAMP_LEFT,
        prop::EX_STAMPED_ACQUIRED,
        prop::EX_TAKEN_OVER,
    ]);

    let mut all = vec![
        a, a3, b, b1, b2, b3, c, c2, d, e, f, g, h, i, j, k, l, l2, m,
    ];
    for cfg in &mut all {
        cfg.fences = cfg.expectation(prop::FENCE_FORWARD) != Expect::Info;
    }
    all
}
