// calc import: a Hugging Face config.json as the equivalent calc model YAML.
#include "cli/support.h"
#include "spec/hf/import.h"
#include "spec/model_reader.h"

namespace calc::cli {

/// Prints the YAML (Markdown format) or {model_type, file, yaml} (JSON). The YAML is read back
/// before printing, so what is printed is a model calc accepts.
result run_import(const options& o) {
  hf::imported m = hf::import_config(o.model);
  read_model_text(m.yaml, o.model + " (as imported)");
  result r;
  if (o.format == "md") r.text = m.yaml;  // other formats render `body`
  r.body = {{"model_type", m.model_type}, {"file", m.file}, {"yaml", m.yaml}};
  r.title = "calc import";
  return r;
}

}  // namespace calc::cli
