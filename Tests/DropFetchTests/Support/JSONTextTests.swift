@testable import DropFetch
import Foundation
import Testing

/// The status files' JSON writer: what it writes for numbers is what `String` would, and the
/// document parses back with Foundation's JSON reader.
@Suite("JSON text")
struct JSONTextTests {
    private func document(_ build: (inout JSONText) -> Void) -> String {
        var json = JSONText()
        json.beginObject()
        build(&json)
        json.endObject()
        return String(decoding: json.endLine(), as: UTF8.self)
    }

    @Test("integers as String writes them, the extremes too")
    func integers() throws {
        let values: [Int64] = [0, 7, 10, 99, 1_000, -1, -42, 1_234_567_890_123, .max, .min]
        let text = document { json in
            for (index, value) in values.enumerated() {
                json.beginObject(named: "n\(index)")
                json.field("value", value)
                json.endObject()
            }
            json.field("none", Int64?.none)
        }
        for (index, value) in values.enumerated() {
            #expect(text.contains("\"n\(index)\": {\n    \"value\": \(value)\n  }"))
        }
        #expect(text.contains("\"none\": null") && text.hasSuffix("}\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(((object["n8"] as? [String: Any])?["value"] as? NSNumber)?.int64Value == .max)
        #expect(((object["n9"] as? [String: Any])?["value"] as? NSNumber)?.int64Value == .min)
    }

    @Test("a key made at run time is escaped; nesting indents two spaces a level")
    func runTimeKeys() throws {
        let text = document { json in
            json.beginObject(named: "a \"quoted\" class")
            json.beginArray("list")
            json.element("x")
            json.endArray()
            json.endObject()
        }
        #expect(text == "{\n  \"a \\\"quoted\\\" class\": {\n    \"list\": [\n      \"x\"\n    ]\n  }\n}\n")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(((object["a \"quoted\" class"] as? [String: Any])?["list"] as? [String]) == ["x"])
    }

    @Test("seconds to the millisecond as String(Double) writes the rounded value", arguments: [
        0.0, 0.001, 0.0104, 0.0105, 0.5, 1.0, 1.25, 12.345, 59.9996, 3_600.007, 86_400.1, -2.5, 123_456_789.123,
    ])
    func milliseconds(seconds: Double) {
        let text = document { $0.field("seconds", milliseconds: seconds) }
        #expect(text.contains("\"seconds\": \(String((seconds * 1000).rounded() / 1000))\n"))
    }
}
