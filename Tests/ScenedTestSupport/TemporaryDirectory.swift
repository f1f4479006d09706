import Glibc

/// A private directory under /tmp, removed with everything in it by `remove()` or, at the
/// latest, when released.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "scened-test") {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: \(errnoText())")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { removeTree(path) }

    /// The path of `name` in the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Removes the directory and its content now (again later is harmless).
    public func remove() { removeTree(path) }

    /// Writes `text` to `relative` (which may name directories: they are created); returns the
    /// full path.
    @discardableResult
    public func write(_ relative: String, _ text: String) throws -> String {
        let full = file(relative)
        try makeDirectories(String(full[..<full.lastIndex(of: "/")!]))
        try writeTextFile(full, text)
        return full
    }

    /// Creates a symlink at `relative` (creating its directories) pointing to `target`.
    public func symlink(_ target: String, at relative: String) throws {
        let full = file(relative)
        try makeDirectories(String(full[..<full.lastIndex(of: "/")!]))
        guard Glibc.symlink(target, full) == 0 else { throw TestFailure("symlink \(full): \(errnoText())") }
    }
}
