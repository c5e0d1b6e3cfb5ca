/// The version `--version` prints and the User-Agent carries; the VERSION file, which `make deb`
/// packages, must say the same (VersionTests).
public enum DropFetchVersion { public static let string = "0.1.0" }
