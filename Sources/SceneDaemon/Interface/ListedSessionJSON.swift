import Glibc
import SceneCore
import Varlink

extension JSONWriter {
    /// A session as listings show it: the same bytes as `session(s, payloads: nil)`, made
    /// in one go on the stack and appended once. A listing of 100,000 sessions spent more on
    /// appending each key, value and comma to the reply buffer (a capacity and uniqueness
    /// check and a copy every time) than on anything else of the daemon's.
    mutating func listedSession(_ s: SceneSession) {
        var configuration = s.configurationName
        var app = s.app.rawValue
        configuration.withUTF8 { name in
            // Escaping is the general writer's business; names needing it are rare.
            guard !name.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                session(s, payloads: nil)
                return
            }
            app.withUTF8 { appID in
                // The fixed text is under 400 bytes, and each of the 12 numbers under 21.
                let bound = 400 + 12 * 21 + appID.count + name.count
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { buffer in
                    var out = ListedSessionBytes(buffer.baseAddress!)
                    out.put(#"{"id":"s"#)
                    out.decimal(s.id.rawValue)
                    out.put(#"","app":""#)
                    out.put(appID)
                    out.put(#"","role":""#)
                    out.put(s.role.staticName)
                    out.put(#"","configuration":""#)
                    out.put(name)
                    out.put(#"","condition":""#)
                    out.put(s.condition.staticName)
                    out.put(#"","state":""#)
                    out.put(s.sceneState.staticName)
                    out.put(#"","userInfoSize":"#)
                    out.decimal(UInt64(s.savedUserInfo.byteCount))
                    out.put(#","restorationSize":"#)
                    out.decimal(UInt64(s.savedRestoration.byteCount))
                    out.put(#","footprint":"#)
                    out.decimal(s.footprint)
                    out.put(s.isProtected ? #","protected":true,"restoreCostMs":"# : #","protected":false,"restoreCostMs":"#)
                    out.decimal(UInt64(s.restoreCostMs))
                    out.put(#","sceneInstance":"#)
                    out.decimal(UInt64(s.sceneInstance))
                    out.put(#","createdAt":"#)
                    out.signed(s.createdAt.microseconds)
                    out.put(#","lastActiveAt":"#)
                    out.signed(s.lastActiveAt.microseconds)
                    out.put(#","backgroundSince":"#)
                    out.signed(s.backgroundSince.microseconds)
                    out.put(#","activations":"#)
                    out.decimal(UInt64(s.activations))
                    out.put(#","restores":"#)
                    out.decimal(UInt64(s.restores))
                    out.put(UInt8(ascii: "}"))
                    element(UnsafeBufferPointer(start: buffer.baseAddress, count: out.p - buffer.baseAddress!))
                }
            }
        }
    }
}

/// Writes forward from a pointer into memory the caller sized: no checks.
private struct ListedSessionBytes {
    var p: UnsafeMutablePointer<UInt8>

    init(_ p: UnsafeMutablePointer<UInt8>) { self.p = p }

    mutating func put(_ text: StaticString) {
        let n = text.utf8CodeUnitCount
        memcpy(p, text.utf8Start, n)
        p += n
    }

    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        memcpy(p, base, bytes.count)
        p += bytes.count
    }

    mutating func put(_ byte: UInt8) {
        p.pointee = byte
        p += 1
    }

    mutating func decimal(_ value: UInt64) {
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        var q = p + digits
        p = q
        rest = value
        repeat {
            q -= 1
            q.pointee = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        } while rest != 0
    }

    mutating func signed(_ value: Int64) {
        if value < 0 { put(UInt8(ascii: "-")) }
        decimal(value.magnitude)
    }
}
