# lit configuration for fusegate's text-IR tests: each .fg file holds a graph
# and RUN/CHECK lines; `fusegate explain` is the tool under test.
import os
import lit.formats

config.name = "fusegate"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".fg", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.substitutions.append(("%fusegate", lit_config.params["fusegate"]))
config.substitutions.append(("FileCheck", lit_config.params["filecheck"]))
config.environment['FUSEGATE_VERIFY'] = '1'  # the verifiers between passes run in every case
