import Glibc
import SceneControl

exit(SceneCtl.main(Array(CommandLine.arguments.dropFirst())))
