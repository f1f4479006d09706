import SceneCore
import SystemdKit
import Varlink

/// One Varlink client. Replies are first held, tagged with the batch their content depends on,
/// and released to the socket only once that batch is committed: a reply always describes
/// committed state. Held replies keep their order.
final class ClientConnection {
    let number: Int
    let fd: Int32
    var wire: VarlinkConnection
    var source: IOSource?

    /// Replies waiting for a commit, framed, in order, grouped by batch.
    private var held: [(batch: UInt64, bytes: [UInt8], count: Int)] = []
    private(set) var heldReplies = 0
    private(set) var heldBytes = 0

    /// An open `more` call. Varlink does not multiplex: until it ends, no other call of this
    /// connection is processed.
    var stream: ReplyStream?
    /// Set after a protocol violation: the error reply goes out, then the connection closes.
    var closeAfterFlush = false
    var isClosed = false
    /// Input is not read while output is backed up (backpressure on pipelining clients).
    var readingPaused = false
    /// Paused only until the end of the loop iteration, so that the commit step gets its turn.
    var pausedForTurn = false
    /// Queued for the end-of-iteration flush.
    var needsFlush = false
    /// In the listener's list of connections with held replies.
    var isWaiting = false

    init(number: Int, fd: Int32, limits: VarlinkConnection.Limits) {
        self.number = number
        self.fd = fd
        wire = VarlinkConnection(limits: limits)
    }

    /// Appends one framed message to the replies held for `batch`. `build` writes one object.
    func hold(batch: UInt64, _ build: (inout JSONWriter) -> Void) {
        if held.last?.batch != batch { held.append((batch, [], 0)) }
        let last = held.count - 1
        var writer = JSONWriter()
        swap(&writer.bytes, &held[last].bytes)
        let before = writer.bytes.count
        build(&writer)
        writer.bytes.append(0)
        heldBytes += writer.bytes.count - before
        swap(&writer.bytes, &held[last].bytes)
        held[last].count += 1
        heldReplies += 1
    }

    func holdError(batch: UInt64, _ error: VarlinkError) {
        hold(batch: batch) { w in
            w.beginObject()
            w.key("error")
            w.string(error.name)
            w.key("parameters")
            w.value(.object(error.parameters))
            w.endObject()
        }
    }

    /// Moves the replies of batches up to `batch` to the output buffer (committed).
    func release(through batch: UInt64) {
        while let first = held.first, first.batch <= batch {
            wire.enqueue(first.bytes)
            heldBytes -= first.bytes.count
            heldReplies -= first.count
            held.removeFirst()
        }
    }

    /// The commit these replies waited for failed: every reply of those batches becomes that
    /// error, since none of the changes they describe was kept.
    func fail(through batch: UInt64, with error: VarlinkError) {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("error")
        writer.string(error.name)
        writer.key("parameters")
        writer.value(.object(error.parameters))
        writer.endObject()
        writer.bytes.append(0)
        while let first = held.first, first.batch <= batch {
            for _ in 0..<first.count { wire.enqueue(writer.bytes) }
            heldBytes -= first.bytes.count
            heldReplies -= first.count
            held.removeFirst()
        }
    }

    var hasHeldReplies: Bool { heldReplies > 0 }
}

/// A streaming reply in progress.
enum ReplyStream {
    /// Monitor: a backlog from the event log (when `since` was given), then live events.
    case monitor(MonitorStream)
    /// ListSessions with `more`: batches produced as the client reads.
    case listing(SessionListing)
}

struct MonitorStream {
    var app: AppID?
    var session: SessionID?
    /// Next sequence number to replay from the log; nil once live.
    var backlogNext: UInt64?
    /// Live events below this were already covered by the backlog.
    var liveFrom: UInt64

    func matches(_ e: LifecycleEvent) -> Bool {
        if let app, e.app != app { return false }
        if let session, !e.concerns(session) { return false }
        return true
    }
}

struct SessionListing {
    var ids: [SessionID]
    var next: Int
    var condition: SessionCondition?
    var state: SceneActivationState?
}
