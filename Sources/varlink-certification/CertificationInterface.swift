import Varlink

/// The `org.varlink.certification` interface and the values its test sequence passes along:
/// each method's reply is the next method's argument, so both sides check the same constants.
enum Certification {
    static let interfaceName = "org.varlink.certification"

    static let interfaceText = """
        # The Varlink project's certification interface: a client calls Start, Test01 … Test11
        # and End in order, passing each reply on as the next call's arguments.
        interface org.varlink.certification

        type Interface (
          foo: ?[]?[string](foo, bar, baz),
          anon: (foo: bool, bar: bool)
        )

        type MyType (
          object: object,
          enum: (one, two, three),
          struct: (first: int, second: string),
          array: []string,
          dictionary: [string]string,
          stringset: [string](),
          nullable: ?string,
          nullable_array_struct: ?[](first: int, second: string),
          interface: Interface
        )

        method Start() -> (client_id: string)

        method Test01(client_id: string) -> (bool: bool)

        method Test02(client_id: string, bool: bool) -> (int: int)

        method Test03(client_id: string, int: int) -> (float: float)

        method Test04(client_id: string, float: float) -> (string: string)

        method Test05(client_id: string, string: string) -> (
          bool: bool,
          int: int,
          float: float,
          string: string
        )

        method Test06(
          client_id: string,
          bool: bool,
          int: int,
          float: float,
          string: string
        ) -> (
          struct: (
            bool: bool,
            int: int,
            float: float,
            string: string
          )
        )

        method Test07(
          client_id: string,
          struct: (
            bool: bool,
            int: int,
            float: float,
            string: string
          )
        ) -> (map: [string]string)

        method Test08(client_id: string, map: [string]string) -> (set: [string]())

        method Test09(client_id: string, set: [string]()) -> (mytype: MyType)

        # Answers with ten replies, all but the last marked "continues".
        method Test10(client_id: string, mytype: MyType) -> (string: string)

        # Must be called with "oneway".
        method Test11(client_id: string, last_more_replies: []string) -> ()

        method End(client_id: string) -> (all_ok: bool)

        error ClientIdError ()
        error CertificationError (wants: object, got: object)

        """

    /// The methods in the order a client must call them.
    static let sequence = ["Start", "Test01", "Test02", "Test03", "Test04", "Test05", "Test06", "Test07", "Test08",
                           "Test09", "Test10", "Test11", "End"]

    static let pi = 3.141592653589793

    static let four: JSONObject = ["bool": false, "int": 2, "float": .double(pi), "string": "a lot of string"]
    static let map: JSONObject = ["foo": "Foo", "bar": "Bar"]
    static let set: JSONObject = ["one": [:], "two": [:], "three": [:]]

    /// Test09's reply and Test10's argument. The nullable members are null here; a client may
    /// also leave them out, which the server accepts.
    static let myType: JSONObject = [
        "object": ["method": "org.varlink.certification.Test09", "parameters": ["map": .object(map)]],
        "enum": "two",
        "struct": ["first": 1, "second": "2"],
        "array": ["one", "two", "three"],
        "dictionary": .object(map),
        "stringset": .object(set),
        "nullable": .null,
        "nullable_array_struct": .null,
        "interface": [
            "foo": [.null, ["foo": "foo", "bar": "bar"], .null, ["one": "foo", "two": "bar"]],
            "anon": ["foo": true, "bar": false],
        ],
    ]

    static let moreReplies: [JSONValue] = (1...10).map { .string("Reply number \($0)") }

    /// What `method` returns (without client_id); Test11 returns nothing and Start a new id.
    static func reply(to method: String) -> JSONObject {
        switch method {
        case "Test01": return ["bool": true]
        case "Test02": return ["int": 1]
        case "Test03": return ["float": 1.0]
        case "Test04": return ["string": "ping"]
        case "Test05": return four
        case "Test06": return ["struct": .object(four)]
        case "Test07": return ["map": .object(map)]
        case "Test08": return ["set": .object(set)]
        case "Test09": return ["mytype": .object(myType)]
        case "End": return ["all_ok": true]
        default: return [:]
        }
    }

    /// The arguments `method` must receive besides client_id: the previous method's reply,
    /// except Test10 (the type from Test09) and Test11 (the strings Test10 streamed).
    static func arguments(of method: String) -> JSONObject {
        switch method {
        case "Test11": return ["last_more_replies": .array(moreReplies)]
        case "End", "Test01": return [:]
        default:
            guard let index = sequence.firstIndex(of: method), index > 0 else { return [:] }
            return reply(to: sequence[index - 1])
        }
    }
}
