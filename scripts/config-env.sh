# Sourced by scripts/sam-build.sh and scripts/deploy.sh: takes --config-env ENV (or
# --config-env=ENV) out of "$@" into $config_env (default: default) and leaves the other
# arguments in the array $args; then $arch is ENV's architecture, checked by
# scripts/sam-arch.py (its build and deploy parameters agree), or the script exits.
config_env=default
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --config-env) config_env=$2; shift 2 ;;
    --config-env=*) config_env=${1#*=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
arch=$(python3 "$root/scripts/sam-arch.py" config --config-env "$config_env")
