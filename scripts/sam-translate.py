#!/usr/bin/env python3
"""template.yaml as CloudFormation deploys it: SAM's own translator (aws-sam-translator, which
the SAM CLI in .venv-sam brings) expands the serverless resources into the roles, event source
mappings, schedules and invoke configs they become. Prints the expanded template as JSON.

  .venv-sam/bin/python scripts/sam-translate.py [template.yaml]

The CodeUri of each function and the ContentUri of each layer are first replaced by S3
objects, as `sam deploy` packages them;
a template that needs an AWS managed policy (SAM would look it up in IAM) is refused, since
what such a policy grants cannot be read here. Used by tests/tests/template_policy.rs.
"""
import json
import os
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "template.yaml")
with open(path) as f:
    template = yaml_parse(f.read())
for resource in template.get("Resources", {}).values():
    if resource.get("Type") == "AWS::Serverless::Function":
        resource["Properties"]["CodeUri"] = "s3://artifacts/code.zip"
    if resource.get("Type") == "AWS::Serverless::LayerVersion":
        resource["Properties"]["ContentUri"] = "s3://artifacts/layer.zip"


class NoManagedPolicies:
    def load(self):
        sys.exit("sam-translate: the template needs AWS managed policies, whose grants cannot be checked here")


os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
expanded = transform(
    template,
    {"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::Partition": "aws"},
    NoManagedPolicies(),
)
json.dump(expanded, sys.stdout, indent=1, sort_keys=True)
print()
