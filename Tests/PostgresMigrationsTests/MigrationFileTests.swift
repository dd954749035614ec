import Testing
import TodoExample
@Test func printSchema() { print(todoModel.createSchemaSQL()) }
