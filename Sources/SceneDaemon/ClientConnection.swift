import SceneCore
import SystemdKit
import Varlink

/// One Varlink client. Replies are first written to `held` and released to the socket only
/// after the loop iteration's commit, so a reply always describes committed state.
final class ClientConnection {
    let number: Int
    let fd: Int32
    var wire: VarlinkConnection
    var source: IOSource?

    /// Replies waiting for the commit, already framed.
    private(set) var held: [UInt8] = []
    private(set) var heldReplies = 0

    /// An open `more` call. Varlink does not multiplex: until it ends, no other call of this
    /// connection is processed.
    var stream: ReplyStream?
    /// Set after a protocol violation: the error reply goes out, then the connection closes.
    var closeAfterFlush = false
    var isClosed = false
    /// Input is not read while output is backed up (backpressure on pipelining clients).
    var readingPaused = false
    /// Queued for the end-of-iteration flush.
    var needsFlush = false

    init(number: Int, fd: Int32, limits: VarlinkConnection.Limits) {
        self.number = number
        self.fd = fd
        wire = VarlinkConnection(limits: limits)
    }

    /// Appends one framed message to the held replies. `build` writes a single JSON object.
    func hold(_ build: (inout JSONWriter) -> Void) {
        var writer = JSONWriter()
        swap(&writer.bytes, &held)
        build(&writer)
        writer.bytes.append(0)
        swap(&writer.bytes, &held)
        heldReplies += 1
    }

    func holdError(_ error: VarlinkError) {
        hold { w in
            w.beginObject()
            w.key("error")
            w.string(error.name)
            w.key("parameters")
            w.value(.object(error.parameters))
            w.endObject()
        }
    }

    /// Moves the held replies to the output buffer (after a successful commit).
    func releaseHeld() {
        guard !held.isEmpty else { return }
        wire.enqueue(held)
        held.removeAll(keepingCapacity: true)
        heldReplies = 0
    }

    /// The commit these replies waited for failed: every one of them becomes that error, since
    /// none of the changes they describe was kept.
    func failHeld(with error: VarlinkError) {
        let count = heldReplies
        held.removeAll(keepingCapacity: true)
        heldReplies = 0
        for _ in 0..<count { holdError(error) }
        releaseHeld()
    }

    var heldBytes: Int { held.count }
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
