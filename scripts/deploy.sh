#!/usr/bin/env bash
# Build and deploy for one architecture:
#   scripts/deploy.sh [--config-env ENV] [sam deploy arguments...]     (e.g. --guided,
#   --stack-name harel-dev, --parameter-overrides AlarmTopicArn=arn:...)
# ENV is a samconfig.toml environment: `default` (arm64) or `x86` (x86_64). The build
# (scripts/sam-build.sh) and the deploy read the same environment, so the binaries and the
# functions' Architecture agree; an --parameter-overrides naming another Architecture is refused.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# --config-env ENV out of the arguments, and ENV's architecture: $config_env, $args, $arch
source "$root/scripts/config-env.sh"
# sam deploy's --parameter-overrides replaces samconfig's (it does not merge): the
# architecture is added to it, and another architecture in it is refused
for i in ${args[@]+"${!args[@]}"}; do
  a=${args[$i]}
  if [ "$a" = --parameter-overrides ] && [ $((i + 1)) -lt ${#args[@]} ]; then
    i=$((i + 1)); a=${args[$i]}
  elif [[ "$a" == --parameter-overrides=* ]]; then
    a=${a#--parameter-overrides=}; args[$i]=--parameter-overrides
    args=("${args[@]:0:$((i + 1))}" "$a" "${args[@]:$((i + 1))}")
    i=$((i + 1))
  else
    continue
  fi
  if [[ "$a" == *Architecture=* ]]; then
    want=${a##*Architecture=}; want=${want%% *}; want=${want//\"/}
    if [ "$want" != "$arch" ]; then
      echo "deploy: --parameter-overrides asks Architecture=$want, samconfig's [$config_env] builds $arch: use --config-env instead" >&2
      exit 1
    fi
  else
    args[$i]="$a Architecture=$arch"
  fi
done
if [ "${DEPLOY_DRY_RUN:-}" = 1 ]; then
  # what would run (the test of these checks)
  echo "sam-build.sh --config-env $config_env"
  echo "sam deploy --config-env $config_env ${args[*]+${args[*]}}"
  exit 0
fi
scripts/sam-build.sh --config-env "$config_env"
bins=$(scripts/install-lambda-tools.sh | paste -sd:)
export PATH="$bins:$PATH" SAM_CLI_TELEMETRY=0
sam deploy --config-env "$config_env" ${args[@]+"${args[@]}"}
