import PostgresClient

/// The rows of one batch of a large fetch of faults (``RowSnapshot``), as the batch came: the
/// values decoded off the context (while the server runs the next `FETCH` of an asynchronous
/// fetch, or while the context registers the previous batch of an ordinary one), so that the
/// faults fire later without decoding anything on the context's thread. Shared by the
/// snapshots of its rows only when a chunk did not decode; otherwise its faults keep rows of
/// the chunks, under a ``KeptReading`` (``pendingSnapshot(at:version:)``), and the batch goes
/// once registered. The name is from when the rows stayed encoded until a fault fired: a
/// result whose chunk of rows does not decode still keeps it encoded, and decodes it again
/// when one of its faults fires.
///
/// The rows' keys and versions are not kept here: registration reads them from the
/// ``EncodedBatch`` that brings the rows, and each fault keeps its version in its snapshot.
///
/// Only results whose every column has a decoding step that cannot fail take this form
/// (``SnapshotDecoder/decodesWithoutFailure``): a row decoded late, when a fault fires, has
/// no caller to report an error to.
final class EncodedRows: Sendable {
    /// The fetch the rows came in: while it lives, the row cache keeps the rows that change.
    let reader: RowCache.Reader
    /// The number of rows.
    let count: Int
    /// The rows' values, ``SnapshotDecoder/chunkRows`` at a time: the faults of a chunk then
    /// share one ``DecodedRows``, as the objects of an ordinary fetch do. Every chunk, decoded
    /// as the batch arrived (the result is freed); empty when one did not decode. Not an enum
    /// with ``kept``: reading a constant array of the batch costs no retain of it, for each
    /// of a million faults firing.
    private let decodedChunks: [DecodedRows]
    /// When a chunk did not decode, the result, kept: each chunk is decoded (again) the first
    /// time one of its rows is asked for. Without it, the faults keep rows of the decoded
    /// chunks themselves, which hold the reading they wait under (``KeptReading``).
    private let kept: (result: QueryResult, decoder: SnapshotDecoder, chunks: Locked<[DecodedRows?]>)?

    /// Reads the keys and versions of `result` and decodes its values, off the context (an
    /// asynchronous fetch decodes a batch while the server runs the next `FETCH`), a chunk of
    /// rows at a time; nil when a column could fail to decode.
    static func batch(of result: QueryResult, decoder: SnapshotDecoder, reader: RowCache.Reader) throws -> EncodedBatch? {
        guard decoder.decodesWithoutFailure else { return nil }
        var chunks: [DecodedRows?] = []
        chunks.reserveCapacity((result.count + SnapshotDecoder.chunkRows - 1) / SnapshotDecoder.chunkRows)
        let (keys, versions) = try SnapshotDecoder.identities(count: result.count) { rows, keys, versions in
            do {
                chunks.append(try decoder.values(of: result, rows: rows, keys: keys, versions: versions))
            } catch {
                // A value of the wrong size from the server: that chunk's faults read their
                // rows from the database when they fire, which reports the error.
                try decoder.storeIdentities(ofRows: rows, of: result, keys: keys, versions: versions)
                chunks.append(nil)
            }
        }
        let rows = EncodedRows(count: keys.count, chunks: chunks, result: result, decoder: decoder, reader: reader)
        return EncodedBatch(rows: rows, keys: keys, versions: versions)
    }

    private init(count: Int, chunks: [DecodedRows?], result: QueryResult, decoder: SnapshotDecoder, reader: RowCache.Reader) {
        self.reader = reader
        self.count = count
        let decoded = chunks.compactMap { $0 }
        if decoded.count == chunks.count {
            decodedChunks = decoded
            kept = nil
            Self.keep(decoded, under: reader)
        } else {
            decodedChunks = []
            kept = (result, decoder, Locked(chunks))
        }
    }

    /// The rows of a batch an ordinary fetch decoded in chunks (``SnapshotDecoder/batch(of:rows:)``),
    /// for its faults to keep; nil for rows decoded one by one.
    static func batch(of batch: SnapshotBatch, reader: RowCache.Reader) -> EncodedBatch? {
        guard let (keys, versions, chunks) = batch.chunked else { return nil }
        return EncodedBatch(rows: EncodedRows(count: keys.count, chunks: chunks, reader: reader), keys: keys, versions: versions)
    }

    private init(count: Int, chunks: [DecodedRows], reader: RowCache.Reader) {
        self.reader = reader
        self.count = count
        decodedChunks = chunks
        kept = nil
        Self.keep(chunks, under: reader)
    }

    /// Gives the decoded chunks of a batch the reading its faults wait under, before any
    /// fault holds a row of them (an ordinary fetch decodes its batches before its reader
    /// begins).
    private static func keep(_ chunks: [DecodedRows], under reader: RowCache.Reader) {
        let reading = KeptReading(reader)
        for chunk in chunks { chunk.keep(under: reading) }
    }

    /// The row a fault of row `index` keeps until it fires: a row of its decoded chunk, which
    /// holds the reading it waits under; the row of this batch (decoded when the fault
    /// fires) when a chunk did not decode.
    func pendingSnapshot(at index: Int, version: UInt32) -> RowSnapshot {
        guard kept == nil else { return RowSnapshot(row: index, of: self, version: version) }
        let chunk = index / SnapshotDecoder.chunkRows
        return RowSnapshot(row: index - chunk * SnapshotDecoder.chunkRows, of: decodedChunks[chunk], version: version)
    }

    /// The snapshot of row `index`, of `version`, decoded: a row of its chunk's
    /// ``DecodedRows``; nil when the chunk does not decode (a value of the wrong size from the
    /// server): the fault then reads its row from the database, whose error it reports.
    func decodedSnapshot(at index: Int, version: UInt32) -> RowSnapshot? {
        decoded(at: index).map { RowSnapshot(row: $0.row, of: $0.rows, version: version) }
    }

    /// The values of row `index`; NULLs when it does not decode (only faults read these rows,
    /// through ``decodedSnapshot(at:version:)``, which tells).
    func values(at index: Int) -> PropertyValues {
        decoded(at: index).map { $0.rows.values(at: $0.row) }
            ?? PropertyValues([AttributeValue](repeating: .null, count: kept?.decoder.propertyCount ?? 0))
    }

    /// Row `index` as a row of its chunk's ``DecodedRows`` (decoded now if the chunk was
    /// kept encoded); nil when the chunk does not decode.
    @inline(__always)
    private func decoded(at index: Int) -> (rows: DecodedRows, row: Int)? {
        let chunk = index / SnapshotDecoder.chunkRows
        let start = chunk * SnapshotDecoder.chunkRows
        let rows: DecodedRows?
        if let kept {
            rows = kept.chunks.withLock { chunks -> DecodedRows? in
                if let rows = chunks[chunk] { return rows }
                let rows = try? kept.decoder.values(of: kept.result, rows: start..<min(count, start + SnapshotDecoder.chunkRows))
                chunks[chunk] = rows
                return rows
            }
        } else {
            rows = decodedChunks[chunk]
        }
        return rows.map { ($0, index - start) }
    }
}
