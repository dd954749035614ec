import Foundation

/// Case and diacritic folding for `[c]`, `[d]` and `[cd]` comparisons, done the same way in
/// SQL and in memory so that a predicate gives the same answer in both places.
///
/// Case folding is `lower()` in SQL and `lowercased()` in memory: full Unicode in a UTF-8
/// database (`C.UTF-8`, ICU or libc UTF-8 locales). Diacritic folding maps the letters of
/// Latin-1, Latin Extended-A/B and Latin Extended Additional to their base letter and drops
/// combining marks (U+0300–U+036F): `translate()` with one fixed table in SQL, the same table
/// in memory. It needs no extension (`unaccent`) and no privileges.
enum TextFolding {
    /// Letters with diacritics, then (without counterparts) the combining marks, deleted.
    static let accented: String = [
        "ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüýÿĀāĂăĄąĆćĈĉĊ",
        "ċČčĎďĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĨĩĪīĬĭĮįİĴĵĶķĹĺĻļĽľŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚś",
        "ŜŝŞşŠšŢţŤťŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžƠơƯưǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛǜǞǟǠǡǢǣǦǧǨǩǪ",
        "ǫǬǭǮǰǴǵǸǹǺǻǼǽǾǿȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗȘșȚțȞȟȦȧȨȩȪȫȬȭȮȯȰȱȲȳḀḁḂḃḄ",
        "ḅḆḇḈḉḊḋḌḍḎḏḐḑḒḓḔḕḖḗḘḙḚḛḜḝḞḟḠḡḢḣḤḥḦḧḨḩḪḫḬḭḮḯḰḱḲḳḴḵḶḷḸḹḺḻḼḽḾḿṀṁṂṃṄ",
        "ṅṆṇṈṉṊṋṌṍṎṏṐṑṒṓṔṕṖṗṘṙṚṛṜṝṞṟṠṡṢṣṤṥṦṧṨṩṪṫṬṭṮṯṰṱṲṳṴṵṶṷṸṹṺṻṼṽṾṿẀẁẂẃẄ",
        "ẅẆẇẈẉẊẋẌẍẎẏẐẑẒẓẔẕẖẗẘẙẛẠạẢảẤấẦầẨẩẪẫẬậẮắẰằẲẳẴẵẶặẸẹẺẻẼẽẾếỀềỂểỄễỆệỈỉ",
        "ỊịỌọỎỏỐốỒồỔổỖỗỘộỚớỜờỞởỠỡỢợỤụỦủỨứỪừỬửỮữỰựỲỳỴỵỶỷỸỹØøĐđŁłĦħŦŧƗɨƵƶǤǥ",
        "ı",
    ].joined() + String(String.UnicodeScalarView((0x300...0x36F).compactMap(Unicode.Scalar.init)))

    /// The base letter of each letter in ``accented``, in the same order.
    static let plain: String = [
        "AAAAAACEEEEIIIINOOOOOUUUUYaaaaaaceeeeiiiinooooouuuuyyAaAaAaCcCcC",
        "cCcDdEeEeEeEeEeGgGgGgGgHhIiIiIiIiIJjKkLlLlLlNnNnNnOoOoOoRrRrRrSs",
        "SsSsSsTtTtUuUuUuUuUuUuWwYyYZzZzZzOoUuAaIiOoUuUuUuUuUuAaAaÆæGgKkO",
        "oOoƷjGgNnAaÆæØøAaAaEeEeIiIiOoOoRrRrUuUuSsTtHhAaEeOoOoOoOoYyAaBbB",
        "bBbCcDdDdDdDdDdEeEeEeEeEeFfGgHhHhHhHhHhIiIiKkKkKkLlLlLlLlMmMmMmN",
        "nNnNnNnOoOoOoOoPpPpRrRrRrRrSsSsSsSsSsTtTtTtTtUuUuUuUuUuVvVvWwWwW",
        "wWwWwXxXxYyZzZzZzhtwyſAaAaAaAaAaAaAaAaAaAaAaAaEeEeEeEeEeEeEeEeIi",
        "IiOoOoOoOoOoOoOoOoOoOoOoOoUuUuUuUuUuUuUuYyYyYyYyOoDdLlHhTtIiZzGg",
        "i",
    ].joined()

    private static let table: [Unicode.Scalar: Unicode.Scalar?] = {
        var table: [Unicode.Scalar: Unicode.Scalar?] = [:]
        let bases = Array(plain.unicodeScalars)
        for (position, scalar) in accented.unicodeScalars.enumerated() {
            table[scalar] = position < bases.count ? bases[position] : nil
        }
        return table
    }()

    /// `expression` folded in SQL.
    static func sql(_ expression: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        var result = caseInsensitive ? "lower(\(expression))" : expression
        if diacriticInsensitive {
            result = "translate(\(result), '\(accented)', '\(plain)')"
        }
        return result
    }

    /// `string` folded in memory, exactly as ``sql(_:caseInsensitive:diacriticInsensitive:)`` folds it.
    static func fold(_ string: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        var result = caseInsensitive ? string.lowercased() : string
        if diacriticInsensitive {
            var scalars = String.UnicodeScalarView()
            for scalar in result.unicodeScalars {
                if let mapped = table[scalar] {
                    if let mapped { scalars.append(mapped) }
                } else {
                    scalars.append(scalar)
                }
            }
            result = String(scalars)
        }
        return result
    }
}
