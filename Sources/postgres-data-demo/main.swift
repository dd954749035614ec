import PostgresClient
print("demo: see issue 8")
