import Glibc
import Varlink

/// The shell around `CertificationService`: one thread, poll(2) over the listening socket and
/// every connection, each connection a `VarlinkConnection`. A peer that breaks the protocol
/// gets its error and is closed; one that stops reading is dropped; the others go on.
struct CertificationServer {
    private struct Peer {
        var fd: Int32
        var connection = VarlinkConnection(limits: .init(maxMessageBytes: 1 << 20, maxPendingOutputBytes: 4 << 20))
        var closing = false
    }

    private let listenFD: Int32
    private var peers: [Peer] = []
    private var service = CertificationService(makeID: CertificationServer.randomID)
    private let maxPeers = 256
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)

    init(listening fd: Int32) {
        listenFD = fd
    }

    static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        return String((0..<32).map { _ in digits[Int(generator.next() % 16)] })
    }

    mutating func run() -> Never {
        while true {
            var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)]
            for peer in peers {
                let wantsWrite = peer.connection.hasPendingOutput
                let events = (peer.closing ? 0 : Int16(POLLIN)) | (wantsWrite ? Int16(POLLOUT) : 0)
                fds.append(pollfd(fd: peer.fd, events: events, revents: 0))
            }
            if poll(&fds, nfds_t(fds.count), -1) < 0 {
                guard errno == EINTR else { fatalError("poll: errno \(errno)") }
                continue
            }
            for index in stride(from: peers.count - 1, through: 0, by: -1) where fds[index + 1].revents != 0 {
                if !serve(index, fds[index + 1].revents) { drop(index) }
            }
            if fds[0].revents & Int16(POLLIN) != 0 { acceptAll() }
        }
    }

    private mutating func acceptAll() {
        while true {
            let accepted: Int32?
            do { accepted = try UnixSocket.accept(listenFD) } catch {
                printError("varlink-certification: \(error)")
                return
            }
            guard let fd = accepted else { return }
            guard peers.count < maxPeers else {
                close(fd)
                continue
            }
            peers.append(Peer(fd: fd))
        }
    }

    /// Reads, answers and writes for one peer; false when it should be closed.
    private mutating func serve(_ index: Int, _ events: Int16) -> Bool {
        if events & Int16(POLLIN) != 0, !peers[index].closing {
            switch buffer.withUnsafeMutableBytes({ UnixSocket.readNonBlocking(peers[index].fd, into: $0) }) {
            case .bytes(let n): buffer.withUnsafeBytes { peers[index].connection.receive(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            case .wouldBlock: break
            case .closed, .error: return false
            }
            answerCalls(index)
        } else if events & Int16(POLLERR | POLLHUP) != 0, !peers[index].connection.hasPendingOutput {
            return false
        }
        if peers[index].connection.isOverflowing { return false }
        return flush(index)
    }

    private mutating func answerCalls(_ index: Int) {
        while true {
            switch peers[index].connection.nextCall() {
            case .needMoreData:
                return
            case .violation(let violation):
                peers[index].connection.enqueue(violation.errorReply(errorName: "org.varlink.service.InvalidParameter"))
                peers[index].closing = true
                return
            case .call(let call):
                for reply in service.handle(call) { peers[index].connection.enqueue(reply: reply) }
            }
        }
    }

    private mutating func flush(_ index: Int) -> Bool {
        while peers[index].connection.hasPendingOutput {
            let fd = peers[index].fd
            switch peers[index].connection.withPendingOutput({ UnixSocket.writeNonBlocking(fd, $0) }) {
            case .bytes(let n): peers[index].connection.consumedOutput(n)
            case .wouldBlock: return true
            case .closed, .error: return false
            }
        }
        return !peers[index].closing
    }

    private mutating func drop(_ index: Int) {
        close(peers[index].fd)
        peers.remove(at: index)
    }
}

/// Unbuffered, so a test reading the output sees each line as it is written.
func writeLine(_ text: String, to fd: Int32 = 1) {
    var line = text + "\n"
    line.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }
}

func printError(_ text: String) { writeLine(text, to: 2) }
