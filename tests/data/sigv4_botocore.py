"""Signs requests with botocore's S3 SigV4 signer, an implementation
independent of cohort's, for tests/data/s3_storage_test.cc (s3rver does not
check signatures). argv[1]: JSON list of {method, url, body, access_key,
secret_key, token, region}; prints one Authorization header per request.
The clock is fixed at 2013-05-24T00:00:00Z. Exit 3 when botocore is missing."""
import datetime
import json
import sys
from unittest import mock

try:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError as e:
    print(f"botocore is not installed ({e}); tools/setup.sh installs python3-botocore")
    sys.exit(3)


class FixedClock(datetime.datetime):
    @classmethod
    def utcnow(cls):
        return cls(2013, 5, 24, 0, 0, 0)


for r in json.loads(sys.argv[1]):
    request = AWSRequest(method=r["method"], url=r["url"], data=r["body"].encode())
    creds = Credentials(r["access_key"], r["secret_key"], r["token"] or None)
    with mock.patch("botocore.auth.datetime.datetime", FixedClock):
        S3SigV4Auth(creds, "s3", r["region"]).add_auth(request)
    print(request.headers["Authorization"])
