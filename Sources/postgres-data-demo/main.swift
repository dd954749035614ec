import PostgresClient
import PostgresDataTesting

print("demo placeholder")
