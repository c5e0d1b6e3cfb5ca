/// The version `--version` prints and the User-Agent carries; VERSION (`make deb`) must match (VersionTests).
public enum DropFetchVersion { public static let string = "0.1.0" }
