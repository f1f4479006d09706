// Kept apart: the only file of the bench that imports Foundation (its Process is the reference
// ProcessSpawner is compared with).
import Foundation

func foundationProcessRound() throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/true")
    process.environment = [:]
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
}
