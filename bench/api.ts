// Placeholder filled in by the foundation benchmark (GET /v1/context vs a bare Express handler).
export async function run(): Promise<void> {
  console.log('api benchmark: not written yet');
}
