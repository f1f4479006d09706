/// The repository, found from this file's path (Tests/SceneDaemonTests/Support.swift).
let repositoryRoot: String = {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    return parts.joined(separator: "/")
}()
