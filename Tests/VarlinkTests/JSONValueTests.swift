import Testing
@testable import Varlink

@Suite struct JSONValueTests {
    @Test func accessorsMatchOnlyTheirCase() {
        let s: JSONValue = "x"
        #expect(s.stringValue == "x")
        #expect(s.intValue == nil && s.boolValue == nil && s.objectValue == nil && s.arrayValue == nil && s.doubleValue == nil)
        #expect(JSONValue.bool(true).boolValue == true)
        #expect(JSONValue.null.isNull)
        #expect(!JSONValue.bool(false).isNull)
        #expect(JSONValue.array([1]).arrayValue == [1])
        #expect(JSONValue.int(3).doubleValue == 3)
    }

    @Test func intValueAcceptsIntegralDoublesWithinInt64() {
        #expect(JSONValue.int(-5).intValue == -5)
        #expect(JSONValue.double(3.0).intValue == 3)
        #expect(JSONValue.double(-9_223_372_036_854_775_808).intValue == .min)
        #expect(JSONValue.double(3.5).intValue == nil)
        #expect(JSONValue.double(9_223_372_036_854_775_808).intValue == nil)
        #expect(JSONValue.double(.infinity).intValue == nil)
        #expect(JSONValue.double(.nan).intValue == nil)
    }

    @Test func subscriptsAreSafe() {
        let value: JSONValue = ["a": [10, 20]]
        #expect(value["a"]?[1] == .int(20))
        #expect(value["a"]?[2] == nil)
        #expect(value["a"]?[-1] == nil)
        #expect(value["b"] == nil)
        #expect(JSONValue.int(1)["a"] == nil)
        #expect(JSONValue.int(1)[0] == nil)
    }

    @Test func intAndDoubleAreDistinct() {
        #expect(JSONValue.int(1) != JSONValue.double(1))
    }
}

@Suite struct JSONObjectTests {
    @Test func keepsInsertionOrderAndReplacesInPlace() {
        var object: JSONObject = ["z": 1, "a": 2]
        object["m"] = 3
        object["z"] = 4
        #expect(object.keys == ["z", "a", "m"])
        #expect(object.values == [4, 2, 3])
        #expect(object.count == 3)
        #expect(Array(object).map(\.key) == ["z", "a", "m"])
    }

    @Test func assigningNilRemoves() {
        var object: JSONObject = ["a": 1, "b": 2]
        object["a"] = nil
        #expect(object.keys == ["b"])
        #expect(object.removeValue(forKey: "b") == 2)
        #expect(object.removeValue(forKey: "b") == nil)
        #expect(object.isEmpty)
        // Storing JSON null is different from removing.
        object["n"] = .null
        #expect(object["n"] == .null)
        #expect(object.contains(key: "n"))
    }

    @Test func initialisersKeepFirstPositionAndLastValue() {
        let fromPairs = JSONObject([("a", 1), ("b", 2), ("a", 3)])
        #expect(fromPairs.keys == ["a", "b"])
        #expect(fromPairs["a"] == 3)
        let fromKeyValuePairs = JSONObject(["x": true, "y": false] as KeyValuePairs<String, JSONValue>)
        #expect(fromKeyValuePairs.keys == ["x", "y"])
        #expect(JSONObject().isEmpty)
    }

    @Test func equalityIgnoresOrder() {
        let a: JSONObject = ["a": 1, "b": [1, 2]]
        let b: JSONObject = ["b": [1, 2], "a": 1]
        #expect(a == b)
        #expect(a != ["a": 1])
        #expect(a != ["a": 1, "c": [1, 2]])
        #expect(a != ["a": 2, "b": [1, 2]])
    }

    @Test func largeObjectsStayConsistentThroughTheIndex() {
        var object = JSONObject()
        for i in 0..<50 { object["k\(i)"] = .int(Int64(i)) }
        #expect(object["k49"] == 49)
        object["k10"] = nil
        #expect(object["k10"] == nil)
        #expect(object["k11"] == 11)
        #expect(object["k49"] == 49)
        object["k10"] = "back"
        #expect(object.keys.last == "k10")
        #expect(object.count == 50)
        // Shrinking below the threshold falls back to linear lookup.
        for i in 0..<45 { object["k\(i)"] = nil }
        #expect(object.count == 5)
        #expect(object["k47"] == 47)
        #expect(object["k10"] == nil)
    }

    @Test func describesItselfAsJSON() {
        let object: JSONObject = ["a": "b"]
        #expect(object.description == #"{"a":"b"}"#)
    }
}
