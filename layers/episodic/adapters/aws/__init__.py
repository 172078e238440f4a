"""The AWS backend: DynamoDB timeline (TTL, Streams), S3 cold archive, EventBridge ingestion.

Every adapter takes its boto3 client from the caller (the composition root), so tests run
them for real under moto and production gives them clients with the right retries.
"""
