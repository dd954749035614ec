import Foundation
import PostgresClient
import PostgresDataTesting

let config = try await TestDatabase.fresh(prefix: "smoke")
print("config:", config)
let c = try await Connection.connect(config)
let r = try await c.query("SELECT $1::int8 + 1 AS x, $2::text AS t, now() AS n, 1.5::numeric AS d, ARRAY[1,2,NULL]::int4[] AS a", 41, "héllo")
for row in r {
    print(try row.decode((Int64, String, Date, Decimal, [Int32?]).self))
}
do { _ = try await c.query("SELEC 1") } catch { print(error) }
do { let v = try r[0].decode(String.self, at: 0); print(v) } catch { print(error) }
let t = Task { try await c.query("SELECT pg_sleep(30)") }
try await Task.sleep(for: .milliseconds(200))
let start = ContinuousClock.now
t.cancel()
do { _ = try await t.value } catch { print("cancel after", ContinuousClock.now - start, error) }
print(try await c.query("SELECT 1").first!.decode(Int32.self, at: 0))
var n = 0
for try await batch in try c.stream("SELECT g FROM generate_series(1, 100000) g", mode: .cursor(batchSize: 10000)) { n += batch.count }
print("streamed", n)
n = 0
for try await batch in try c.stream("SELECT g FROM generate_series(1, 100000) g", mode: .singleRow(batchSize: 1000)) { n += batch.count }
print("streamed single", n)
try await c.query("CREATE TABLE items(id bigserial primary key, name text not null, created_at timestamptz not null)")
let copied = try await c.copyRows(into: "items", columns: ["name", "created_at"]) { w in
  for i in 0..<100_000 { try w.append("Item \(i)", Date()) }
}
print("copied", copied)
