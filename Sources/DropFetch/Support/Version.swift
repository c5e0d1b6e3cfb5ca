public enum DropFetchVersion { public static let string = "0.1.0" }
