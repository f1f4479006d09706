import ScenedTestSupport
import Testing
import Varlink

let limitExceeded = manager + "LimitExceeded"

/// What is wrong with `reply` as io.scened.Manager.LimitExceeded for `limit` (with `maximum`,
/// when given, and always a message); nil when nothing is.
func limitExceededProblem(_ reply: JSONObject?, limit: String, maximum: Int64? = nil) -> String? {
    guard let reply else { return "no reply" }
    guard reply.errorName == limitExceeded else { return "not \(limitExceeded): \(describe(reply))" }
    let p = reply.parametersObject
    if p["limit"]?.stringValue != limit { return "limit is \(p["limit"].map { "\($0)" } ?? "missing"), expected \(limit)" }
    if let maximum, p["maximum"]?.intValue != maximum {
        return "maximum is \(p["maximum"].map { "\($0)" } ?? "missing"), expected \(maximum)"
    }
    if p["maximum"]?.intValue == nil { return "maximum is missing or not an int: \(describe(reply))" }
    if (p["message"]?.stringValue ?? "").isEmpty { return "message is missing or empty" }
    return nil
}

/// Records a failure unless `reply` is LimitExceeded for `limit`; returns whether it is.
@discardableResult
func expectLimitExceeded(_ reply: JSONObject?, limit: String, maximum: Int64? = nil, _ context: String,
                         sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let problem = limitExceededProblem(reply, limit: limit, maximum: maximum)
    #expect(problem == nil, "\(context): \(problem ?? "")", sourceLocation: sourceLocation)
    return problem == nil
}

/// A reply, shortened for a failure message.
func describe(_ reply: JSONObject) -> String {
    let text = "\(reply)"
    return text.count > 300 ? String(text.prefix(300)) + "…" : text
}

/// How a connection ended: its last message (parsed, when it is JSON), whether the daemon
/// closed it, how many messages came.
struct Ending {
    var last: JSONObject?
    var lastBytes: [UInt8]?
    var closed = false
    var messages = 0
    /// Every message, for the connections asked for.
    var all: [[UInt8]] = []
}

/// Reads every connection, round-robin, until each one is closed by the daemon or `seconds`
/// pass. Messages are only counted, except the last of each (and all of those in
/// `keepingAll`), so that megabytes of unread events cost no parsing.
func readUntilClosed(_ connections: [RawConnection], seconds: Double, keepingAll: Set<Int> = []) throws -> [Ending] {
    var endings = Array(repeating: Ending(), count: connections.count)
    let deadline = Deadline(seconds: seconds)
    while !deadline.hasPassed {
        var open = 0
        var progress = false
        for (index, connection) in connections.enumerated() where !endings[index].closed {
            let before = connection.receivedBytes
            let alive = try connection.fill(waitingMilliseconds: 0)
            if connection.receivedBytes != before { progress = true }
            while let message = connection.bufferedMessage() {
                endings[index].lastBytes = message
                endings[index].messages += 1
                if keepingAll.contains(index) { endings[index].all.append(message) }
            }
            if alive { open += 1 } else { endings[index].closed = true }
        }
        if open == 0 { break }
        if !progress { sleepMilliseconds(5) }
    }
    for index in endings.indices { endings[index].last = endings[index].lastBytes.flatMap(parseObject) }
    return endings
}

/// `bytes` as a JSON object, nil when they are not one.
func parseObject(_ bytes: [UInt8]) -> JSONObject? {
    guard case .object(let object)? = try? JSONParser.parse(bytes) else { return nil }
    return object
}

/// The lines of `text` that hold `number` as a whole number (not inside a longer one).
func lines(of text: String, mentioning number: Int) -> [Substring] {
    let digits = Array(String(number).utf8)
    return text.split(separator: "\n").filter { line in
        var run: [UInt8] = []
        for byte in line.utf8 + [UInt8(ascii: " ")] {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                run.append(byte)
            } else {
                if run == digits { return true }
                run.removeAll()
            }
        }
        return false
    }
}
