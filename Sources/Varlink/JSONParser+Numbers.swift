extension JSONReader {
    /// Parses a number. Plain integers that fit `Int64` are accumulated directly; anything with a
    /// fraction, an exponent or too many digits goes through the standard library's
    /// locale-independent `Double(_:)`.
    mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = pos
        let negative = base[pos] == UInt8(ascii: "-")
        if negative { pos += 1 }
        guard pos < end, isDigit(base[pos]) else { throw failure(pos < end ? .invalidNumber : .unexpectedEnd) }

        var magnitude: UInt64 = 0
        var overflow = false
        if base[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < end, isDigit(base[pos]) { throw failure(.leadingZero, at: pos - 1) }
        } else {
            while pos < end, isDigit(base[pos]) {
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(base[pos] &- UInt8(ascii: "0")))
                magnitude = sum
                overflow = overflow || o1 || o2
                pos += 1
            }
        }

        var integral = true
        if pos < end, base[pos] == UInt8(ascii: ".") {
            integral = false
            pos += 1
            try skipDigits()
        }
        if pos < end, base[pos] | 0x20 == UInt8(ascii: "e") {
            integral = false
            pos += 1
            if pos < end, base[pos] == UInt8(ascii: "+") || base[pos] == UInt8(ascii: "-") { pos += 1 }
            try skipDigits()
        }

        if integral, !overflow {
            if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .int(Int64(truncatingIfNeeded: 0 &- magnitude)) }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: pos - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw failure(.numberOutOfRange, at: start) }
        return .double(value)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// One or more digits, as required after '.' and after the exponent marker.
    private mutating func skipDigits() throws(JSONError) {
        guard pos < end else { throw failure(.unexpectedEnd) }
        guard isDigit(base[pos]) else { throw failure(.invalidNumber) }
        while pos < end, isDigit(base[pos]) { pos += 1 }
    }
}
