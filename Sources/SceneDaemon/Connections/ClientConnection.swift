import SceneCore
import SystemdKit
import Varlink

/// One Varlink client: its socket, its wire buffers, its state machine, and the replies it is
/// owed. Replies are first held, tagged with the batch their content depends on, and become
/// output only once that batch is committed: a reply always describes committed state. Held
/// replies keep their order.
///
/// Only the server changes it, always through `machine` for anything that decides what
/// happens next; which of the server's lists it is on is the `PassScheduler`'s. The rest is
/// storage.
final class ClientConnection {
    let number: Int
    /// Its place in the server's `PassScheduler`.
    let slot: Int
    let fd: Int32
    let peer: PeerCredentials
    var wire: VarlinkConnection
    var machine: ConnectionMachine
    var source: IOSource?

    /// Where its replies wait for their batch to commit (shared by all connections; it holds
    /// replies by connection number, never the connection).
    let outbox: Outbox

    /// An open `more` call. Varlink does not multiplex: until it ends, no other call of this
    /// connection is processed.
    var stream: ReplyStream?
    /// While a call that waited for its app's process runs again: that app. Its launch
    /// already happened when the process attached.
    var resumedAfterLaunch: AppID?
    /// Whether the server has it among its fan-out monitors (`MonitorRegistry`); the server
    /// brings it in line with `stream` after every step.
    var isFanOutMonitor = false

    /// Set by the handler of the call being made when that call is an answer with a deadline
    /// of seconds (an app's Acknowledge); the machine keeps it, for judging whether the client
    /// is interactive.
    var callIsPatient: Bool {
        get { machine.callIsPatient }
        set { if newValue { machine.markCallPatient() } else { machine.callBegins() } }
    }
    /// The machine's unsent and partial bytes as last counted in the server's totals.
    var accountedUnsent = 0
    var accountedPartial = 0
    /// When a write to the client last went through (or it connected): a client whose output
    /// does not move is not reading.
    var lastWriteProgress: UInt64 = 0
    /// A monitor's: bytes of the events it is behind by (as encoded for it), counted when they
    /// were published and taken off as the backlog sends them: unread output that is not in
    /// memory. Kept here rather than in its `MonitorStream` so that counting a batch for a
    /// monitor that is behind costs an addition, not a rewrite of its stream.
    var behindBytes = 0
    /// The interest last given to epoll.
    var appliedInterest = ConnectionMachine.Interest(read: false, write: false, registered: false)

    init(number: Int, slot: Int, fd: Int32, peer: PeerCredentials, limits: VarlinkConnection.Limits,
         machine: ConnectionMachine, outbox: Outbox) {
        self.number = number
        self.slot = slot
        self.outbox = outbox
        self.fd = fd
        self.peer = peer
        self.machine = machine
        wire = VarlinkConnection(limits: limits)
        // Drained reply buffers go back to the outbox's pool rather than to malloc.
        wire.keepsDrainedOutput = true
    }

    var heldReplies: Int { machine.heldReplies }
    var isClosed: Bool { machine.isClosed }

    /// Holds one framed reply until `batch` commits; returns its size. `build` writes one object,
    /// of about `expected` bytes if the caller knows.
    @discardableResult
    func hold(batch: UInt64, expected: Int = 0, _ build: (inout JSONWriter) -> Void) -> Int {
        // Nobody would read it.
        if machine.isPeerGone || machine.isClosed { return 0 }
        let size = outbox.holdReply(connection: number, batch: batch, expected: expected, build)
        machine.replyHeld(bytes: size)
        return size
    }

    @discardableResult
    func holdError(batch: UInt64, _ error: VarlinkError) -> Int {
        hold(batch: batch) { w in w.varlinkError(error) }
    }

    /// Holds an already framed message behind the last held reply, to go out right after it.
    func holdBehindLast(_ bytes: [UInt8]) {
        guard let batch = outbox.lastBatch(connection: number) else { return }
        hold(batch: batch) { w in w.bytes.append(contentsOf: bytes.last == 0 ? bytes.dropLast() : bytes[...]) }
    }

    /// Forgets every held reply (the peer is gone, or is being cut off).
    func dropHeld() {
        outbox.dropReplies(connection: number)
    }

    var hasHeldReplies: Bool { outbox.hasReplies(connection: number) }
}

extension JSONWriter {
    mutating func varlinkError(_ error: VarlinkError) {
        beginObject()
        key("error")
        string(error.name)
        key("parameters")
        value(.object(error.parameters))
        endObject()
    }
}

/// Who is at the other end, as the kernel recorded it at connect time (SO_PEERCRED).
struct PeerCredentials: Equatable, Sendable, CustomStringConvertible {
    var pid: Int32
    var uid: UInt32
    var gid: UInt32
    /// Supplementary groups (SO_PEERGROUPS).
    var groups: [UInt32] = []

    static let unknown = PeerCredentials(pid: 0, uid: UInt32.max, gid: UInt32.max)

    var identity: CallerIdentity { CallerIdentity(uid: uid, gid: gid, pid: pid, groups: groups) }

    var description: String { "pid \(pid), uid \(uid)" }
}

/// A streaming reply in progress.
enum ReplyStream {
    /// Monitor: a backlog from the event log (when `since` was given), then live events.
    case monitor(MonitorStream)
    /// ListSessions with `more`: batches produced as the client reads.
    case listing(SessionListing)
    /// ExportTrace: the event log read piece by piece and turned into trace lines.
    case export(TraceExport)
    /// Not a stream: a call waiting for its app's process to attach (the connection takes no
    /// further call until it is answered, as while a stream runs).
    case launching(AppID)
}

struct MonitorStream {
    var app: AppID?
    var session: SessionID?
    /// Next sequence number to replay from the log; nil once live.
    var backlogNext: UInt64?
    /// Live events below this were already covered by the backlog.
    var liveFrom: UInt64
    /// A piece of the backlog is being read by the commit thread.
    var awaitingRead = false
    /// An app's process attached with io.scened.App.Attach: its events carry deadlines and
    /// what the app needs to build its scenes, and they are fed by app, not by fan-out.
    var attached = false
    /// It fell behind the live events (its client did not take them as fast as they came, and
    /// its output reached the high-water mark): it reads them from the event log, from
    /// `backlogNext`, instead of having them queued.
    var fellBehind = false

    func matches(_ e: LifecycleEvent) -> Bool {
        if let app, e.app != app { return false }
        if let session, !e.concerns(session) { return false }
        return true
    }
}

struct SessionListing {
    /// The sessions that matched when the listing began, the next one to send first.
    var ids: SessionIDCursor
    var condition: SessionCondition?
    var state: SceneActivationState?
}

extension ClientConnection {
    /// A message already framed by the Varlink layer (error replies for protocol violations).
    func holdRaw(_ bytes: [UInt8], batch: UInt64) {
        hold(batch: batch) { w in
            // The violation reply comes framed with its NUL; the writer adds one itself.
            w.bytes.append(contentsOf: bytes.last == 0 ? bytes.dropLast() : bytes[...])
        }
    }
}

extension ClientConnection {
    /// Committed stream data owed to the client and not queued (a monitor that fell behind).
    var streamBehindBytes: Int {
        if case .monitor = stream { behindBytes } else { 0 }
    }

    /// A stream with more to send right now: a listing, or a monitor still replaying its backlog.
    var streamHasMore: Bool {
        switch stream {
        case .listing: true
        case .monitor(let m): m.backlogNext != nil && !m.awaitingRead
        case .export(let x): !x.awaitingRead
        case .launching, nil: false
        }
    }
}
