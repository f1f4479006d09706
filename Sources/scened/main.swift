import Glibc
import SceneDaemon

exit(DaemonMain.run(Array(CommandLine.arguments.dropFirst())))
