import org.apache.lucene.analysis.miscellaneous.ASCIIFoldingFilter;
public class GenFold {
  public static void main(String[] a) {
    StringBuilder keys = new StringBuilder(), vals = new StringBuilder();
    int n = 0;
    char[] in = new char[1]; char[] out = new char[8];
    for (int c = 0x80; c <= 0xFFFF; c++) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      in[0] = (char) c;
      int len = ASCIIFoldingFilter.foldToASCII(in, 0, out, 0, 1);
      String o = new String(out, 0, len);
      if (len == 1 && out[0] == c) continue;
      StringBuilder e = new StringBuilder();
      for (char ch : o.toCharArray()) { if (ch == '"' || ch == '\\') e.append('\\'); e.append(ch); }
      keys.append(String.format("0x%04X,", c)).append(n % 12 == 11 ? "\n    " : " ");
      vals.append('"').append(e).append("\",").append(n % 12 == 11 ? "\n    " : " ");
      n++;
    }
    System.out.println("// @generated from Lucene 9.12 `ASCIIFoldingFilter.foldToASCII` (Apache-2.0) by calling it on");
    System.out.println("// every BMP character and keeping those it changes. Do not edit by hand.");
    System.out.println();
    System.out.println("/// Characters that `asciifolding` rewrites, sorted.");
    System.out.println("pub(super) static FOLD_KEYS: [u16; " + n + "] = [\n    " + keys.toString().trim() + "\n];");
    System.out.println();
    System.out.println("/// The ASCII replacement of `FOLD_KEYS[i]`.");
    System.out.println("pub(super) static FOLD_VALUES: [&str; " + n + "] = [\n    " + vals.toString().trim() + "\n];");
  }
}
