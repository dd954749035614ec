/// Positions of an ordered relationship's objects after a change, keeping as many of the
/// old positions as the new order allows: the objects of the longest run that is still in
/// order keep theirs, the others take positions in the gaps between them.
enum OrderPositions {
    /// The new position of each object of the new order, given its old position (nil for an
    /// object new to the relationship, or whose position is not known). When a gap is too
    /// narrow for the objects moved into it, every object is numbered again, 1, 2, 3….
    static func assign(_ old: [Double?]) -> [Double] {
        let count = old.count
        // The longest strictly increasing subsequence of known positions (patience sorting).
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: count)
        for index in 0..<count {
            guard let value = old[index] else { continue }
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if old[tails[middle]]! < value { low = middle + 1 } else { high = middle }
            }
            previous[index] = low > 0 ? tails[low - 1] : -1
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var kept = [Bool](repeating: false, count: count)
        var cursor = tails.last ?? -1
        while cursor >= 0 {
            kept[cursor] = true
            cursor = previous[cursor]
        }
        var result = [Double](repeating: 0, count: count)
        var start = 0
        while start < count {
            if kept[start] {
                result[start] = old[start]!
                start += 1
                continue
            }
            var end = start
            while end < count && !kept[end] { end += 1 }
            let run = end - start
            let lower = start > 0 ? result[start - 1] : nil
            let upper = end < count ? old[end]! : nil
            switch (lower, upper) {
            case (nil, nil):
                for offset in 0..<run { result[start + offset] = Double(offset + 1) }
            case (let lower?, nil):
                for offset in 0..<run { result[start + offset] = lower + Double(offset + 1) }
            case (nil, let upper?):
                for offset in 0..<run { result[start + offset] = upper - Double(run - offset) }
            case (let lower?, let upper?):
                let step = (upper - lower) / Double(run + 1)
                guard step > max(1e-9, max(abs(lower), abs(upper)) * 1e-12) else { return dense(count) }
                for offset in 0..<run { result[start + offset] = lower + step * Double(offset + 1) }
            }
            start = end
        }
        return result
    }

    /// 1, 2, 3… for `count` objects.
    static func dense(_ count: Int) -> [Double] {
        (0..<count).map { Double($0 + 1) }
    }
}
