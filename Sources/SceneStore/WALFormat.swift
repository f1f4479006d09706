/// SQLite's write-ahead log and its wal-index header as they lie on disk
/// (sqlite.org/fileformat2.html §4, sqlite.org/walformat.html), read by the store itself so that
/// damage SQLite would replay silently can be seen before SQLite opens the database.
enum WALFormat {
    static let headerSize = 32
    static let frameHeaderSize = 24
    /// The only WAL format version SQLite writes (3.7.0).
    static let version: UInt32 = 3_007_000
    static let smallestPageSize = 512

    /// The 32-byte header: magic (whose low bit says which byte order the checksums use),
    /// version, page size, checkpoint sequence, two salts, and a checksum of the first 24 bytes.
    struct Header {
        let bigEndianChecksums: Bool
        let pageSize: Int
        /// Salt-1 and salt-2 as they lie in the file: a frame belongs to this generation of the
        /// log only if it carries the same 8 bytes.
        let salts: UInt64
        let checksum: Checksum

        var frameSize: Int { pageSize + WALFormat.frameHeaderSize }

        /// The header, or why SQLite would not take it.
        static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<Header, HeaderProblem> {
            guard bytes.count >= WALFormat.headerSize else { return .failure(HeaderProblem("it is incomplete")) }
            let magic = bigEndian32(bytes, 0)
            guard magic & 0xFFFF_FFFE == 0x377F_0682 else {
                return .failure(HeaderProblem("bad magic number 0x\(String(magic, radix: 16))"))
            }
            let bigEndian = magic & 1 == 1
            let version = bigEndian32(bytes, 4)
            guard version == WALFormat.version else { return .failure(HeaderProblem("unknown format version \(version)")) }
            let pageSize = Int(bigEndian32(bytes, 8))
            guard isPageSize(pageSize) else { return .failure(HeaderProblem("impossible page size \(pageSize)")) }
            var sum = Checksum()
            sum.add(UnsafeRawBufferPointer(rebasing: bytes[0..<24]), bigEndian: bigEndian)
            guard sum == Checksum(stored: bytes, at: 24) else { return .failure(HeaderProblem("its checksum does not match")) }
            return .success(Header(bigEndianChecksums: bigEndian, pageSize: pageSize,
                                   salts: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self), checksum: sum))
        }
    }

    struct HeaderProblem: Error, Equatable {
        let text: String
        init(_ text: String) { self.text = text }
    }

    static func isPageSize(_ n: Int) -> Bool {
        n >= smallestPageSize && n <= 65536 && n & (n - 1) == 0
    }

    /// SQLite's cumulative checksum: the input read as 32-bit words in the log's byte order,
    /// taken two at a time, each pair folded into both running sums (so that the order of the
    /// words matters, unlike a plain sum).
    struct Checksum: Equatable {
        var s0: UInt32 = 0
        var s1: UInt32 = 0

        init() {}
        init(s0: UInt32, s1: UInt32) { self.s0 = s0; self.s1 = s1 }
        /// Two big-endian words at `offset`, as every checksum is stored.
        init(stored bytes: UnsafeRawBufferPointer, at offset: Int) {
            s0 = bigEndian32(bytes, offset)
            s1 = bigEndian32(bytes, offset + 4)
        }

        /// `bytes.count` is a multiple of 8 (a page, or a header's first 8 or 24 bytes).
        mutating func add(_ bytes: UnsafeRawBufferPointer, bigEndian: Bool) {
            var a = s0, b = s1
            var i = 0
            let n = bytes.count
            if bigEndian {
                while i < n {
                    a = a &+ UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)) &+ b
                    b = b &+ UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self)) &+ a
                    i += 8
                }
            } else {
                while i < n {
                    a = a &+ UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)) &+ b
                    b = b &+ UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self)) &+ a
                    i += 8
                }
            }
            s0 = a
            s1 = b
        }
    }

    /// One frame: a 24-byte header (page number, database size after commit — non-zero only
    /// for the frame that commits a transaction —, the salts, the cumulative checksum) and the
    /// page.
    struct Frame {
        let bytes: UnsafeRawBufferPointer

        var pageNumber: UInt32 { bigEndian32(bytes, 0) }
        var isCommit: Bool { bigEndian32(bytes, 4) != 0 }
        var salts: UInt64 { bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self) }
        var storedChecksum: Checksum { Checksum(stored: bytes, at: 16) }

        /// What SQLite checks (walDecodeFrame): this generation's salts, a page number, and the
        /// checksum continuing from `previous` over the header's first 8 bytes and the page.
        func isValid(after previous: Checksum, header: Header) -> Bool {
            guard salts == header.salts, pageNumber != 0 else { return false }
            var sum = previous
            sum.add(UnsafeRawBufferPointer(rebasing: bytes[0..<8]), bigEndian: header.bigEndianChecksums)
            sum.add(UnsafeRawBufferPointer(rebasing: bytes[WALFormat.frameHeaderSize...]), bigEndian: header.bigEndianChecksums)
            return sum == storedChecksum
        }
    }

    /// The wal-index header at the start of the -shm file (walformat.html §2.1), as the last
    /// writer left it: two 48-byte copies in the host's byte order. `mxFrame` is the last frame
    /// of the last transaction that writer finished committing.
    struct IndexHeader: Equatable {
        let lastCommittedFrame: Int
        let lastFrameChecksum: Checksum
        let salts: UInt64

        /// nil unless both copies agree, the header is initialized, of the known version and its
        /// own checksum matches: anything less says nothing about the log.
        static func parse(_ bytes: UnsafeRawBufferPointer) -> IndexHeader? {
            guard bytes.count >= 96 else { return nil }
            for i in 0..<48 where bytes[i] != bytes[48 + i] { return nil }
            func native(_ offset: Int) -> UInt32 { bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
            guard native(0) == WALFormat.version, bytes[12] == 1 else { return nil }
            // The header's checksum is over its first 40 bytes, in native byte order.
            var sum = Checksum()
            #if _endian(big)
            sum.add(UnsafeRawBufferPointer(rebasing: bytes[0..<40]), bigEndian: true)
            #else
            sum.add(UnsafeRawBufferPointer(rebasing: bytes[0..<40]), bigEndian: false)
            #endif
            guard sum == Checksum(s0: native(40), s1: native(44)) else { return nil }
            return IndexHeader(lastCommittedFrame: Int(native(16)),
                               lastFrameChecksum: Checksum(s0: native(24), s1: native(28)),
                               salts: bytes.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
        }
    }

    static func bigEndian32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
}
