import SceneCore

/// What a scene is opened with (URLs, activities) as bytes in an event's `extra` blob and in
/// a pending Open's row. Part of the schema: never reordered.
enum RoutingCoding {
    static func payload(_ p: OpenPayload, into w: inout ByteWriter) {
        w.varint(UInt64(p.urlContexts.count))
        for c in p.urlContexts {
            w.string(c.url)
            optional(c.sourceApplication?.rawValue, into: &w)
        }
        w.varint(UInt64(p.userActivities.count))
        for a in p.userActivities {
            w.string(a.activityType)
            optional(a.title, into: &w)
            optional(a.userInfo, into: &w)
            optional(a.targetContentIdentifier, into: &w)
            optional(a.webpageURL, into: &w)
        }
    }

    static func payload(_ r: inout ByteReader) throws(ByteReader.Malformed) -> OpenPayload {
        var out = OpenPayload()
        for _ in 0..<(try count(&r)) {
            let url = try r.string()
            let source = try optional(&r)
            guard URLContext.scheme(of: url) != nil else { throw .init() }
            out.urlContexts.append(URLContext(url: url, sourceApplication: try source.map { s throws(ByteReader.Malformed) in
                guard let app = AppID(s) else { throw .init() }
                return app
            }))
        }
        for _ in 0..<(try count(&r)) {
            let type = try r.string()
            let title = try optional(&r)
            var info = try optional(&r)
            // Written into replies verbatim: it must be the JSON object it was.
            if info != nil, !(info!.withUTF8 { JSONCheck.isObject($0) }) { throw .init() }
            out.userActivities.append(UserActivity(activityType: type, title: title, userInfo: info,
                                                   targetContentIdentifier: try optional(&r),
                                                   webpageURL: try optional(&r)))
        }
        guard !out.isEmpty else { throw .init() }
        return out
    }

    /// An activation-condition pattern list as a blob: a count, then each pattern.
    static func patterns(_ list: [String]) -> [UInt8] {
        var w = ByteWriter()
        w.varint(UInt64(list.count))
        for p in list { w.string(p) }
        return w.bytes
    }

    static func patterns(_ blob: UnsafeRawBufferPointer) throws(ByteReader.Malformed) -> [String] {
        var r = ByteReader(blob)
        var list: [String] = []
        for _ in 0..<(try count(&r)) {
            let p = try r.string()
            guard !p.isEmpty else { throw .init() }
            list.append(p)
        }
        guard r.isAtEnd else { throw .init() }
        return list
    }

    /// A count of items, each at least one byte: more than what is left is damage.
    private static func count(_ r: inout ByteReader) throws(ByteReader.Malformed) -> Int {
        let n = try r.varint()
        guard n <= UInt64(r.buffer.count - r.offset) else { throw .init() }
        return Int(n)
    }

    private static func optional(_ s: String?, into w: inout ByteWriter) {
        if let s { w.byte(1); w.string(s) } else { w.byte(0) }
    }

    private static func optional(_ r: inout ByteReader) throws(ByteReader.Malformed) -> String? {
        switch try r.byte() {
        case 0: return nil
        case 1: return try r.string()
        default: throw .init()
        }
    }
}
