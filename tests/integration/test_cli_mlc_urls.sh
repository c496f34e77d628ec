#!/usr/bin/env bash
# modelpkg mlc urls: the cleaned model URL and the resource URLs (WebLLM 0.2.86), text and --json,
# --manifest, --no-clean, the refusals and the usage errors. usage: test_cli_mlc_urls.sh MODELPKG SRC
set -uo pipefail
. "$(dirname "$0")/expect.sh"
cli="$1" src="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

expect hub 0 'model_url +https://huggingface\.co/mlc-ai/M/resolve/main/$' -- "$cli" mlc urls HTTPS://HuggingFace.co:443/mlc-ai/M
expect hub_chat 0 'chat_config +https://huggingface\.co/mlc-ai/M/resolve/main/mlc-chat-config\.json' -- "$cli" mlc urls https://huggingface.co/mlc-ai/M
expect base 0 'tensor_cache_base +https://h/a/resolve/v1/$' -- "$cli" mlc urls https://h/a/resolve/v1
expect no_clean 0 '"tensor_cache_manifest_url": "https://models\.example/tensor-cache\.json"' -- \
  "$cli" mlc urls https://models.example/gemma4 --no-clean --json
expect json_keys 0 '"cleaned": true' -- "$cli" mlc urls http://h/m --json
# a manifest names the documents (the example's: WebLLM's file names), as a file or its directory
G="$src/examples/gemma4-audio"
expect manifest 0 '"chat_config_url": "http://h/m/resolve/main/mlc-chat-config\.json"' -- \
  "$cli" mlc urls http://h/m --manifest "$G/mlc-model-manifest.json" --json
expect manifest_dir 0 'tensor_cache +http://h/m/resolve/main/tensor-cache\.json' -- "$cli" mlc urls http://h/m --manifest "$G"
cp "$G/mlc-model-manifest.json" "$tmp/bad.json"; printf '{' >"$tmp/bad.json"
expect manifest_bad 1 'bad\.json' -- "$cli" mlc urls http://h/m --manifest "$tmp/bad.json"
expect manifest_missing 1 'no-such' -- "$cli" mlc urls http://h/m --manifest "$tmp/no-such.json"
expect ftp 1 'scheme "ftp": only http and https' -- "$cli" mlc urls ftp://h/m
expect ftp_json 1 '"code": "unsupported"' -- "$cli" mlc urls ftp://h/m --json
expect port 1 'port is out of range' -- "$cli" mlc urls http://h:70000/m
expect idna 1 'not supported' -- "$cli" mlc urls "https://bücher.example/m"
expect relative 1 'not an absolute URL' -- "$cli" mlc urls models/m
expect no_arg 2 'urls needs a model URL' -- "$cli" mlc urls
expect two_args 2 'usage|extra|unexpected|too many' -- "$cli" mlc urls http://a/ http://b/
expect listed 0 'urls +MODEL_URL' -- "$cli" mlc --help
finish
