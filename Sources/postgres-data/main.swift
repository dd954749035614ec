print("postgres-data")
