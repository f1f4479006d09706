import SceneCore
import Varlink

/// The [Limits] section: what one client, one user and all clients together may hold, in the
/// spirit of sd-varlink's limits (4096 connections, 1024 per uid). Every limit is answered
/// with `LimitExceeded` naming its setting, never with a silent close.
struct ConnectionLimits: Equatable, Sendable {
    var maxConnections = 4096
    var maxConnectionsPerUser = 1024
    /// One incoming message, without its NUL.
    var maxMessageSize = 1 << 20
    /// Unread output of one client before it is cut off.
    var maxOutputPerConnection = 16 << 20
    /// Unread output of all clients together.
    var maxBufferedOutput = 128 << 20
    /// Partially received messages of all clients together.
    var maxBufferedInput = 64 << 20
    /// µs a connection may hold part of a message without sending more.
    var idleTimeout: Int64 = 30_000_000
    var maxSessionsPerApp = 65536
    var maxUserInfoSize = 64 << 10
    var maxRestorationSize = 512 << 10

    static let errorName = "io.scened.Manager.LimitExceeded"

    /// The setting's current value, for the error's `maximum`.
    func maximum(of limit: String) -> Int64 {
        switch limit {
        case "MaxConnections": Int64(maxConnections)
        case "MaxConnectionsPerUser": Int64(maxConnectionsPerUser)
        case "MaxMessageSize": Int64(maxMessageSize)
        case "MaxOutputPerConnection": Int64(maxOutputPerConnection)
        case "MaxBufferedOutput": Int64(maxBufferedOutput)
        case "MaxBufferedInput": Int64(maxBufferedInput)
        case "IdleTimeoutSec": idleTimeout
        case "MaxSessionsPerApp": Int64(maxSessionsPerApp)
        case "MaxUserInfoSize": Int64(maxUserInfoSize)
        case "MaxRestorationSize": Int64(maxRestorationSize)
        default: 0
        }
    }

    func error(_ limit: String, _ message: String) -> VarlinkError {
        var p = JSONObject()
        p["limit"] = .string(limit)
        p["maximum"] = .int(maximum(of: limit))
        p["message"] = .string(message)
        return VarlinkError(name: Self.errorName, parameters: p)
    }

    private func size(_ bytes: Int) -> String { ByteSize(UInt64(bytes)).exact }

    /// Why a connection was cut off or refused, for the client.
    func explanation(_ limit: String) -> String {
        switch limit {
        case "MaxConnections":
            "too many clients are connected (MaxConnections=\(maxConnections)); try again later"
        case "MaxConnectionsPerUser":
            "this user has too many connections open (MaxConnectionsPerUser=\(maxConnectionsPerUser)); close some"
        case "MaxOutputPerConnection":
            "the client did not read its replies (more than \(size(maxOutputPerConnection)) unread, MaxOutputPerConnection); replies not yet sent were dropped and the connection is closed"
        case "MaxBufferedOutput":
            "the daemon holds too much unread output (MaxBufferedOutput=\(size(maxBufferedOutput))) and this client had the most; replies not yet sent were dropped and the connection is closed"
        case "MaxBufferedInput":
            "partial messages of all clients exceed MaxBufferedInput=\(size(maxBufferedInput)) and this client held the largest; the connection is closed"
        case "IdleTimeoutSec":
            "no more of the message arrived for \(idleTimeout / 1_000_000) s (IdleTimeoutSec); the connection is closed"
        default:
            "limit \(limit) exceeded"
        }
    }
}

extension ConnectionLimits {
    /// The per-connection budget for these limits. A client stops being served at a quarter of
    /// MaxOutputPerConnection owed, so its own replies (released a batch at a time) can never
    /// push it over the limit while it reads: only a client that does not read gets there.
    var connectionBudget: ConnectionMachine.Budget {
        var budget = ConnectionMachine.Budget()
        budget.idleMicroseconds = UInt64(max(idleTimeout, 1))
        budget.owedBytesHighWater = min(budget.owedBytesHighWater, max(maxOutputPerConnection / 4, 4096))
        budget.maxOutputBytes = maxOutputPerConnection
        return budget
    }
}
