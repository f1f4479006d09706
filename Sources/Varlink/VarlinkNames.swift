/// Name rules from the varlink.org interface grammar, shared by call decoding and the IDL parser.
/// They run on every call, so they work on raw UTF-8 bytes rather than on `Substring`s.
enum VarlinkNames {
    /// varlink.org's `[a-z]([-]*[a-z0-9])*(\.[a-z0-9]([-]*[a-z0-9])*)+` (reverse-domain, at least
    /// two segments, dashes only between alphanumerics), except that ASCII capitals are allowed:
    /// systemd's own interfaces (`io.systemd.Journal`, `io.systemd.UserDatabase`) use them, and
    /// both systemd and the python client accept them.
    static func isValidInterfaceName(_ name: String) -> Bool {
        withBytes(name) { isValidInterfaceName($0) }
    }

    /// `[A-Z][A-Za-z0-9]*`: type, method and error names.
    static func isValidMemberName(_ name: String) -> Bool {
        withBytes(name) { isValidMemberName($0) }
    }

    /// `[A-Za-z](_?[A-Za-z0-9])*`: field and enum value names; '_' only singly and inside.
    static func isValidFieldName(_ name: String) -> Bool {
        withBytes(name) { bytes in
            guard let first = bytes.first, isLetter(first), bytes.last != UInt8(ascii: "_") else { return false }
            var previousWasUnderscore = false
            for byte in bytes.dropFirst() {
                if byte == UInt8(ascii: "_") {
                    guard !previousWasUnderscore else { return false }
                    previousWasUnderscore = true
                } else {
                    guard isLetter(byte) || isDigit(byte) else { return false }
                    previousWasUnderscore = false
                }
            }
            return true
        }
    }

    /// `interface.Method` with a valid interface and member name.
    static func isValidQualifiedMember(_ name: String) -> Bool {
        withBytes(name) { bytes in
            guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")) else { return false }
            return isValidInterfaceName(UnsafeBufferPointer(rebasing: bytes[..<dot]))
                && isValidMemberName(UnsafeBufferPointer(rebasing: bytes[(dot + 1)...]))
        }
    }

    private static func isValidInterfaceName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var segments = 1
        var segmentLength = 0
        var previousWasDash = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard segmentLength > 0, !previousWasDash else { return false }
                segments += 1
                segmentLength = 0
                continue
            }
            let isDash = byte == UInt8(ascii: "-")
            guard isLetter(byte) || isDigit(byte) || isDash else { return false }
            if segmentLength == 0 {
                // Segments start alphanumeric; the very first one with a letter.
                guard !isDash, segments > 1 || isLetter(byte) else { return false }
            }
            segmentLength += 1
            previousWasDash = isDash
        }
        return segments >= 2 && segmentLength > 0 && !previousWasDash
    }

    private static func isValidMemberName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, first >= UInt8(ascii: "A"), first <= UInt8(ascii: "Z") else { return false }
        return bytes.dropFirst().allSatisfy { isLetter($0) || isDigit($0) }
    }

    private static func withBytes(_ string: String, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        var string = string
        return string.withUTF8(body)
    }

    @inline(__always)
    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- UInt8(ascii: "a") < 26
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }
}
