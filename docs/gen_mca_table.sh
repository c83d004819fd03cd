#!/bin/sh
# The MCA parameter table of docs/mca.md, generated from what the component
# registers (ompi_info --parsable), so it cannot drift from the code.
#   gen_mca_table.sh                      print the table
#   gen_mca_table.sh --check docs/mca.md  fail if the file's table differs
#   gen_mca_table.sh --update docs/mca.md rewrite the file's table in place
# (the table sits between <!-- mca-table:begin --> and <!-- mca-table:end -->)
# The component must be on OMPI_MCA_mca_base_component_path.
table() {
  ompi_info --parsable --param coll gpu --level 9 | awk -F: '
    $4 == "param" { name = $5; key = $6; val = substr($0, index($0, ":" key ":") + length(key) + 2)
      if (!(name in seen)) { seen[name] = 1; order[++n] = name }
      if (key == "value") value[name] = val
      if (key == "level") level[name] = val
      if (key == "help") help[name] = val
      if (key == "enumerator") enums[name] = enums[name] (enums[name] == "" ? "" : ", ") val }
    END {
      print "| MCA parameter | default | level | meaning |"
      print "| --- | --- | --- | --- |"
      for (i = 1; i <= n; ++i) { k = order[i]; v = value[k]; gsub(/\|/, "\\|", v); h = help[k]; gsub(/\|/, "\\|", h)
        printf "| %s | %s | %s | %s |\n", k, (v == "" ? "(empty)" : v), level[k], h } }'
}
case "$1" in
  --check|--update)
    readme=$2
    [ -f "$readme" ] || { echo "no $readme"; exit 2; }
    new=$(table) || exit 1
    case "$new" in *"| coll_gpu_priority |"*) ;; *) false ;; esac || { echo "ompi_info printed no coll gpu parameters: is the component on the path?"; exit 1; }
    old=$(sed -n '/<!-- mca-table:begin -->/,/<!-- mca-table:end -->/p' "$readme" | sed '1d;$d')
    if [ "$1" = --check ]; then
      [ "$new" = "$old" ] && exit 0
      echo "$readme: the MCA table differs from ompi_info (run docs/gen_mca_table.sh --update docs/mca.md):"
      printf '%s\n' "$new" > /tmp/mca_new.$$; printf '%s\n' "$old" | diff - /tmp/mca_new.$$; rm -f /tmp/mca_new.$$
      exit 1
    fi
    printf '%s\n' "$new" > "$readme.table"
    awk -v tf="$readme.table" '
      /<!-- mca-table:begin -->/ { print; while ((getline l < tf) > 0) print l; skip = 1; next }
      /<!-- mca-table:end -->/ { skip = 0 }
      !skip { print }' "$readme" > "$readme.new" && mv "$readme.new" "$readme"
    rm -f "$readme.table" ;;
  *) table ;;
esac
