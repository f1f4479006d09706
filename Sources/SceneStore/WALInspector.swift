import Glibc

/// What the store found in `<db>-wal` before SQLite opened the database.
///
/// SQLite replays a log up to the last commit before the first frame that fails its checks and
/// ignores the rest without a word. After a crash that is right: the rest is a write that was
/// cut short and never acknowledged. But when frames after the failing one still carry on, with
/// this generation's salts and a consistent checksum chain, to a later commit, committed
/// transactions lie beyond it, and a silent replay would lose them and hand their identifiers
/// out again: that is damage, and the store refuses it unless told to recover.
public struct WALInspection: Sendable, Equatable {
    public enum Condition: Sendable, Equatable {
        /// No log, or nothing in it (an empty file, or a header that no frame follows).
        case absent
        /// Every frame checks out and the last one commits.
        case intact
        /// After the last commit come frames that are uncommitted, cut short or fail their
        /// checksum: a write a crash or power loss interrupted, never acknowledged.
        case tornTail
        /// After the last commit come frames of an earlier generation of the log (SQLite restarts
        /// it from the top after a checkpoint): leftovers, not data.
        case staleFrames
        /// Committed transactions lie beyond a frame that fails (or the header is damaged while
        /// frames follow): SQLite would drop them silently.
        case damaged
    }

    public var condition: Condition
    /// The log's page size, when its header says.
    public var pageSize: Int?
    /// Frames in the file, a partial last one included.
    public var frames: Int
    /// The frames SQLite replays: up to the last commit before the first failing frame.
    public var replayedFrames: Int
    /// The first frame (from 1) that fails its checks, if any does.
    public var firstFailingFrame: Int?
    /// Commit frames after the failing one that continue a consistent chain.
    public var commitsAfterFailure: Int
    /// What was found, for people.
    public var summary: String

    /// The bytes of the frames SQLite will not replay.
    public var unreplayedBytes = 0

    /// Frames SQLite will not replay.
    public var unreplayedFrames: Int { frames - replayedFrames }

    static let absent = WALInspection(condition: .absent, pageSize: nil, frames: 0, replayedFrames: 0,
                                      firstFailingFrame: nil, commitsAfterFailure: 0, summary: "no write-ahead log")
}

enum WALInspector {
    /// Reads `walPath` (and the wal-index header in `shmPath`) and classifies the log. Read-only:
    /// nothing is written.
    static func inspect(walPath: String, shmPath: String) throws(StoreError) -> WALInspection {
        let fd = open(walPath, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let err = errno
            if err == ENOENT { return .absent }
            throw StoreError(errno: err, path: walPath, context: "opening the write-ahead log to check it")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw StoreError(errno: errno, path: walPath, context: "fstat") }
        let size = Int(st.st_size)
        guard size > WALFormat.headerSize else { return .absent }

        let headerBytes = try read(fd, count: WALFormat.headerSize, at: 0, path: walPath)
        let parsed = headerBytes.withUnsafeBytes { WALFormat.Header.parse($0) }
        let header: WALFormat.Header
        switch parsed {
        case .success(let h):
            header = h
        case .failure(let problem):
            // SQLite takes a log whose header it rejects for empty and ignores every frame after
            // it. Frames are counted at the smallest page size: at most this many were lost.
            let frames = (size - WALFormat.headerSize + WALFormat.smallestPageSize + WALFormat.frameHeaderSize - 1)
                / (WALFormat.smallestPageSize + WALFormat.frameHeaderSize)
            return WALInspection(condition: .damaged, pageSize: nil, frames: frames, replayedFrames: 0,
                                 firstFailingFrame: nil, commitsAfterFailure: 0,
                                 summary: "its header is damaged (\(problem.text)) while \(size - WALFormat.headerSize) "
                                     + "bytes of frames follow it: SQLite would ignore all of them",
                                 unreplayedBytes: size - WALFormat.headerSize)
        }
        let frameSize = header.frameSize
        let wholeFrames = (size - WALFormat.headerSize) / frameSize
        let frames = wholeFrames + ((size - WALFormat.headerSize) % frameSize == 0 ? 0 : 1)

        var walk = Walk(header: header)
        // A megabyte or so at a time: a log can be tens of megabytes.
        let batch = max(1, (1 << 20) / frameSize)
        var index = 0
        while index < wholeFrames {
            let n = min(batch, wholeFrames - index)
            let chunk = try read(fd, count: n * frameSize, at: WALFormat.headerSize + index * frameSize, path: walPath)
            chunk.withUnsafeBytes { raw in
                for k in 0..<n {
                    let frame = WALFormat.Frame(bytes: UnsafeRawBufferPointer(rebasing: raw[(k * frameSize)..<((k + 1) * frameSize)]))
                    walk.take(frame, number: index + k + 1)
                }
            }
            index += n
        }
        var result = walk.verdict(frames: frames, pageSize: header.pageSize, indexHeader: { readIndexHeader(shmPath) })
        result.unreplayedBytes = size - WALFormat.headerSize - result.replayedFrames * frameSize
        return result
    }

    /// The frames in order, as SQLite's recovery reads them, and past the first failing one
    /// what a damaged log would still show.
    struct Walk {
        let header: WALFormat.Header
        var chain: WALFormat.Checksum
        /// The last commit frame of the replayed prefix, and its stored checksum.
        var lastCommit = 0
        var lastCommitChecksum: WALFormat.Checksum
        var firstFailing: Int?
        var firstFailingHasSalts = false
        /// Past the failure: frames of this generation that continue the chain from their
        /// predecessor's stored checksum, and the commits among them.
        var commitsAfter = 0
        var previousStored = WALFormat.Checksum()

        init(header: WALFormat.Header) {
            self.header = header
            chain = header.checksum
            lastCommitChecksum = header.checksum
        }

        mutating func take(_ frame: WALFormat.Frame, number: Int) {
            defer { previousStored = frame.storedChecksum }
            guard firstFailing == nil else {
                // Seeded from the stored checksum of the frame before, as SQLite would have
                // computed the chain when it wrote these frames: a frame that checks out this way
                // was written after the failing one, by the same generation of the log.
                if frame.isCommit && frame.isValid(after: previousStored, header: header) { commitsAfter += 1 }
                return
            }
            if frame.isValid(after: chain, header: header) {
                chain = frame.storedChecksum
                if frame.isCommit {
                    lastCommit = number
                    lastCommitChecksum = chain
                }
            } else {
                firstFailing = number
                firstFailingHasSalts = frame.salts == header.salts
            }
        }

        func verdict(frames: Int, pageSize: Int,
                     indexHeader: () -> WALFormat.IndexHeader?) -> WALInspection {
            var result = WALInspection(condition: .intact, pageSize: pageSize, frames: frames, replayedFrames: lastCommit,
                                       firstFailingFrame: firstFailing, commitsAfterFailure: commitsAfter, summary: "")
            let kept = lastCommit == 0 ? "no frame" : "frames 1–\(lastCommit)"
            guard let failing = firstFailing else {
                if lastCommit == frames {
                    result.summary = "\(frames) frame\(frames == 1 ? "" : "s"), all committed"
                } else {
                    result.condition = .tornTail
                    result.summary = "\(kept) committed; frames \(lastCommit + 1)–\(frames) are an unfinished write "
                        + "(uncommitted or cut short)"
                }
                return result
            }
            guard commitsAfter > 0 else {
                if firstFailingHasSalts {
                    result.condition = .tornTail
                    result.summary = "\(kept) committed; from frame \(failing) on, an unfinished write (frame "
                        + "\(failing) fails its checksum and no commit follows it)"
                } else {
                    result.condition = .staleFrames
                    result.summary = "\(kept) committed; frames \(failing)–\(frames) are left over from an earlier "
                        + "generation of the log"
                }
                return result
            }
            // A commit SQLite was still finishing: it writes a transaction's commit frame, then
            // rewrites the checksums of frames it had overwritten in place (pages spilled and
            // changed again in one transaction). Stopped in between, the log looks damaged, but
            // that transaction was never acknowledged. The wal-index header tells: its writer had
            // finished exactly the prefix up to `lastCommit`, and one commit, the unfinished one,
            // lies beyond.
            if commitsAfter == 1, let index = indexHeader(), index.salts == header.salts,
               index.lastCommittedFrame == lastCommit, index.lastFrameChecksum == lastCommitChecksum {
                result.condition = .tornTail
                result.summary = "\(kept) committed; frames \(lastCommit + 1)–\(frames) are a commit that had not "
                    + "finished when the writer stopped (never acknowledged)"
                return result
            }
            result.condition = .damaged
            result.summary = "frame \(failing) of \(frames) fails its checks, yet \(commitsAfter) committed "
                + "transaction\(commitsAfter == 1 ? "" : "s") follow it: SQLite would replay only \(kept) and drop "
                + "\(frames - lastCommit) frame\(frames - lastCommit == 1 ? "" : "s") without a word"
            return result
        }
    }

    static func readIndexHeader(_ shmPath: String) -> WALFormat.IndexHeader? {
        let fd = open(shmPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard let bytes = try? read(fd, count: 96, at: 0, path: shmPath) else { return nil }
        return bytes.withUnsafeBytes { WALFormat.IndexHeader.parse($0) }
    }

    /// Exactly `count` bytes at `offset`.
    static func read(_ fd: Int32, count: Int, at offset: Int, path: String) throws(StoreError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw StoreError(errno: errno, path: path, context: "reading the write-ahead log") }
            if n == 0 { throw StoreError(kind: .io, path: path, message: "reading the write-ahead log: short read") }
            done += n
        }
        return bytes
    }
}
